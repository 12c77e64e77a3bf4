//go:build linux && amd64

package native

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kboost/kboost/kernelsim"
)

// TestMemoryImages checks the batch memory protocol against a model written
// here: every case sees exactly its own scratch and stack contents whatever
// earlier cases of the batch (or of earlier batches) wrote, and the final
// pages are its image with exactly its own stores applied, for stores of one
// word, of more words than the runner records one by one (rep stosb over 300
// bytes), for a store followed by a fault, and next to NoMemory cases.
func TestMemoryImages(t *testing.T) {
	for _, s := range sandboxes(t) {
		a := s.Arch()
		l := a.Layout
		t.Run(sbName(s), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7))
			imgs := make([][2][]byte, 3)
			for i := range imgs {
				for k := range 2 {
					b := make([]byte, kernelsim.PageSize)
					for j := range b {
						b[j] = byte(rng.Uint32())
					}
					imgs[i][k] = b
				}
			}
			const (
				storeAt = 0x100 // mov [ebx], ecx
				stosAt  = 0x200 // rep stosb, 300 bytes of al
				stosLen = 300
			)
			type kind int
			const (
				kLoad kind = iota // mov eax, [ebx]: reads the image
				kStore
				kStos
				kPushFault // push ecx, then ud2: a store, then a fault
				kNoMem
			)
			type tc struct {
				k   kind
				img int
			}
			var plan []tc
			for range 3 {
				for _, k := range []kind{kStore, kLoad, kStos, kLoad, kPushFault, kLoad, kNoMem, kLoad} {
					plan = append(plan, tc{k, rng.IntN(len(imgs))})
				}
			}
			cases := make([]kernelsim.Case, len(plan))
			for i, p := range plan {
				regs := baseRegs(a, uint64(100+i))
				regs.GPR[rBX] = l.Scratch + storeAt
				regs.GPR[rDI] = l.Scratch + stosAt
				regs.Flags &^= kernelsim.FlagDF
				c := kernelsim.Case{Regs: regs, Scratch: imgs[p.img][0], Stack: imgs[p.img][1]}
				switch p.k {
				case kLoad:
					c.Code = []byte{0x8B, 0x03}
				case kStore:
					c.Code = []byte{0x89, 0x0B}
				case kStos:
					c.Code = []byte{0xF3, 0xAA}
					c.Regs.GPR[rCX] = stosLen
					c.Regs.GPR[rAX] = 0x5A
				case kPushFault:
					c.Code = []byte{0x51, 0x0F, 0x0B} // push ecx; ud2
				case kNoMem:
					c.Code = []byte{0x89, 0x0B, 0x51} // mov [ebx], ecx; push ecx
					c.NoMemory = true
				}
				cases[i] = c
			}
			res := make([]kernelsim.Result, len(cases))
			for round := range 2 { // the second round reuses the image slots
				if err := s.Run(cases, res); err != nil {
					t.Fatal(err)
				}
				for i, p := range plan {
					c, r := &cases[i], &res[i]
					what := fmt.Sprintf("round %d case %d (% x, image %d)", round, i, c.Code, p.img)
					if p.k == kNoMem {
						if r.Scratch != nil || r.Stack != nil {
							t.Errorf("%s: NoMemory case returned memory", what)
						}
						continue
					}
					scratch := bytes.Clone(imgs[p.img][0])
					stack := bytes.Clone(imgs[p.img][1])
					ps := int(a.PtrSize())
					word := func(b []byte, off int, v uint64) {
						for j := range ps {
							b[off+j] = byte(v >> (8 * j))
						}
					}
					sp := int(c.Regs.GPR[rSP] - l.Stack)
					if ps == 4 {
						// the i386 runner enters through popf from the case's
						// stack: the flags word is left below the stack pointer
						word(stack, sp-4, c.Regs.Flags|0x2)
					}
					switch p.k {
					case kLoad:
						want := uint64(binary.LittleEndian.Uint32(scratch[storeAt:]))
						if r.Outcome != kernelsim.Completed || r.Regs.GPR[rAX] != want {
							t.Errorf("%s: %v eax=%#x, want the image's %#x", what, r.Outcome, r.Regs.GPR[rAX], want)
						}
					case kStore:
						binary.LittleEndian.PutUint32(scratch[storeAt:], uint32(c.Regs.GPR[rCX]))
					case kStos:
						for j := range stosLen {
							scratch[stosAt+j] = 0x5A
						}
					case kPushFault:
						word(stack, sp-ps, c.Regs.GPR[rCX])
						if r.Outcome != kernelsim.Faulted || r.Fault.Signal != kernelsim.SIGILL {
							t.Errorf("%s: %v %v, want SIGILL", what, r.Outcome, r.Fault)
						}
					}
					if p.k != kPushFault && r.Outcome != kernelsim.Completed {
						t.Errorf("%s: %v %v", what, r.Outcome, r.Fault)
					}
					if d := memDiff("scratch", scratch, r.Scratch); d != "" {
						t.Errorf("%s: final scratch differs from the model at %v", what, d)
					}
					if d := memDiff("stack", stack, r.Stack); d != "" {
						t.Errorf("%s: final stack differs from the model at %v", what, d)
					}
				}
			}
		})
	}
}

// memDiff names the first differing byte of two memory images, "" if none.
func memDiff(name string, x, y []byte) string {
	for i := range max(len(x), len(y)) {
		if i >= len(x) || i >= len(y) || x[i] != y[i] {
			return fmt.Sprintf("%s+%#x", name, i)
		}
	}
	return ""
}
