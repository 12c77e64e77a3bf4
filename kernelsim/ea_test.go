package kernelsim

import (
	"math/rand/v2"
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

func TestMemOperand(t *testing.T) {
	var r Regs
	r.GPR[3], r.GPR[7] = 0xf, 0x2800_0b00 // ebx, edi
	in, err := decode.Decode([]byte{0x0F, 0xAC, 0x74, 0xFB, 0xFF, 0xFF}, decode.Mode32, 0x2000_0000)
	if err != nil {
		t.Fatal(err)
	}
	// -1(%ebx,%edi,8) wraps in 32 bits: 0xf + 0x28000b00*8 - 1
	ea, ok := I386.MemOperand(&in, &r)
	if want := uint64(0xf+0x2800_0b00*8-1) & 0xffff_ffff; !ok || ea != want {
		t.Fatalf("ea %#x %v, want %#x", ea, ok, want)
	}
	if I386.Controlled(ea) {
		t.Errorf("%#x taken as a sandbox page", ea)
	}
	// RIP-relative and REX.B
	in, _ = decode.Decode([]byte{0x48, 0x8B, 0x05, 0x10, 0, 0, 0}, decode.Mode64, 0x1000)
	if ea, ok := X86_64.MemOperand(&in, &r); !ok || ea != 0x1017 {
		t.Errorf("rip-relative ea %#x", ea)
	}
	r.GPR[9] = X86_64.Layout.Scratch + 8
	in, _ = decode.Decode([]byte{0x49, 0x8B, 0x41, 0x08}, decode.Mode64, 0x1000) // mov 8(%r9),%rax
	if ea, ok := X86_64.MemOperand(&in, &r); !ok || ea != X86_64.Layout.Scratch+16 || !X86_64.Controlled(ea) {
		t.Errorf("r9 ea %#x", ea)
	}
}

// FuzzSlotModel: building and verifying a slot and emulating any decodable
// bytes never panics.
func FuzzSlotModel(f *testing.F) {
	for _, s := range [][]byte{{0x48, 0x8B, 0x05, 0x10, 0, 0, 0}, {0xE8, 0, 0, 0, 0}, {0xC3}, {0xE2, 0x10}, {0xFF, 0xD0}, {0x9D}} {
		f.Add(s, uint64(0x5555_7000_0400))
	}
	pol := mustPolicy(f)
	f.Fuzz(func(t *testing.T, b []byte, slot uint64) {
		for _, a := range []*Arch{X86_64, I386} {
			p, err := NewProbe(a, b, FuzzCodeOffset, FuzzSlotOffset)
			if err != nil {
				continue
			}
			for _, path := range []Path{PathBoost, PathSingleStep} {
				if s, err := BuildSlot(&p.Inst, slot&a.RegMask, path); err == nil {
					m := &SlotModel{Site: Site{Policy: pol, SlotAddr: slot & a.RegMask}, Inst: p.Inst, Slot: s, JmpAt: -1, Int3At: -1}
					m.Verify()
				}
			}
			a.Emulate6_1(&p.Inst, a.RandomRegs(nil2rng()), make([]byte, StackSize))
			NewSlotModel(Site{Code: b, Mode: a.Mode, Addr: p.Addr(), SlotAddr: slot & a.RegMask, Policy: pol})
		}
	})
}

func nil2rng() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

func mustPolicy(f *testing.F) *boost.Policy {
	p, err := boost.Lookup("linux-6.1")
	if err != nil {
		f.Fatal(err)
	}
	return p
}
