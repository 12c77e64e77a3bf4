package guest

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/loader"
)

func planned(fn string, offs ...uint64) []Planned {
	var out []Planned
	for _, o := range offs {
		out = append(out, Planned{Rec: VerifyRecord{Func: fn, Off: o, Boundary: true}})
	}
	return out
}

// TestPlanRounds checks the round invariants directly: every boundary probe is
// in exactly one round, and two probes of one function in a round are at least
// the spacing apart.
func TestPlanRounds(t *testing.T) {
	pl := append(planned("a", 0, 1, 3, 5, 8, 20, 24, 30, 47, 48, 100), planned("b", 0, 2, 4)...)
	pl = append(pl, Planned{Rec: VerifyRecord{Func: "a", Off: 2}}) // non-boundary: never in a round
	for _, spacing := range []int{1, 5, 24, 1000} {
		rounds := PlanRounds(pl, spacing)
		seen := map[int]int{}
		for _, r := range rounds {
			last := map[string]int64{}
			for _, i := range r {
				seen[i]++
				p := pl[i].Rec
				if l, ok := last[p.Func]; ok && int64(p.Off)-l < int64(spacing) {
					t.Errorf("spacing %d: %s+%d and +%d in one round", spacing, p.Func, l, p.Off)
				}
				last[p.Func] = int64(p.Off)
			}
		}
		for i := range pl {
			want := 1
			if !pl[i].Rec.Boundary {
				want = 0
			}
			if seen[i] != want {
				t.Errorf("spacing %d: probe %d in %d rounds", spacing, i, seen[i])
			}
		}
		if spacing == 1 && len(rounds) != 1 || spacing == 1000 && len(rounds) != 11 {
			t.Errorf("spacing %d: %d rounds", spacing, len(rounds))
		}
	}
}

// kernelCopy is the slot the kernel writes for the instruction inst at addr
// when its slot is at slot, computed here from the kernel's rebasing formula
// (new disp = addr + disp - slot, for the disp32 at dispAt; -1: none) and
// its tail (int3, or jmp back when boost).
func kernelCopy(inst []byte, dispAt int, addr, slot uint64, boost bool) []byte {
	b := append([]byte(nil), inst...)
	if dispAt >= 0 {
		d := binary.LittleEndian.Uint32(b[dispAt:])
		binary.LittleEndian.PutUint32(b[dispAt:], uint32(addr+uint64(d)-slot))
	}
	if boost {
		rel := uint32(addr + uint64(len(inst)) - (slot + uint64(len(inst)) + 5))
		return append(b, 0xE9, byte(rel), byte(rel>>8), byte(rel>>16), byte(rel>>24))
	}
	return append(b, 0xcc)
}

// TestX86Slots checks that the recorder finds the kernel's slots from the
// kernel's bytes alone: a rebased RIP-relative load among decoys (the same
// instruction rebased for another slot), a jmp back, and a slot that is not
// a copy (kept as the evidence of a disagreement).
func TestX86Slots(t *testing.T) {
	const addr = 0xffffffff81000001
	mov := []byte{0x48, 0x8b, 0x05, 0x34, 0x12, 0x00, 0x00} // mov 0x1234(%rip),%rax
	push := []byte{0x55}
	page := uint64(0xffffffffa0001000)
	fill := func() []byte {
		b := make([]byte, 4096)
		for i := range b {
			b[i] = 0xcc
		}
		return b
	}
	before, after := SlotPages{page: fill()}, SlotPages{page: fill()}
	at := func(i int) uint64 { return page + uint64(i*SlotSize) }
	copy(after[page][3*SlotSize:], kernelCopy(mov, 3, addr, at(3), false))
	copy(after[page][1*SlotSize:], kernelCopy(mov, 3, addr, at(7), false)) // decoy
	copy(after[page][5*SlotSize:], kernelCopy(push, -1, addr-1, at(5), true))
	var m X86Slots
	m.Reset(before, after)
	if a, _, found, _ := m.Claim(mov, addr); !found || a != at(3) {
		t.Errorf("mov: slot %#x found %v, want %#x", a, found, at(3))
	}
	if a, b, found, _ := m.Claim(push, addr-1); !found || a != at(5) || !SlotJumpsBack(hex.EncodeToString(b), a, addr-1, 1) {
		t.Errorf("push: slot %#x found %v, want %#x with its jmp back", a, found, at(5))
	}
	// A wrong byte: no copy, the changed slot is the evidence.
	after[page][3*SlotSize+1] ^= 0xff
	m.Reset(before, after)
	if a, _, found, ok := m.Claim(mov, addr); found || !ok || a != at(1) {
		t.Errorf("corrupted mov: slot %#x found %v ok %v", a, found, ok)
	}
	if X86SlotHolds(kernelCopy(push, -1, addr, at(2), true), at(2), push, addr+4) {
		t.Error("a jmp to elsewhere taken for the jmp back")
	}
}

// TestPredictSlot checks the host's slot prediction against the kernel's
// rebasing formula, and that the kernel's whole slot is trimmed to it.
func TestPredictSlot(t *testing.T) {
	pol, err := boost.Lookup("linux-6.1")
	if err != nil {
		t.Fatal(err)
	}
	pred := loader.NewPredictorEnv(nil, pol, pol.DefaultEnv(), nil)
	const addr = 0xffffffff81000000
	// push %rbp; mov 0x1234(%rip),%rax; ret
	code := []byte{0x55, 0x48, 0x8b, 0x05, 0x34, 0x12, 0x00, 0x00, 0xc3}
	fa, err := pred.Audit(kimage.Symbol{Name: "f", Addr: addr, Size: uint64(len(code))}, code)
	if err != nil {
		t.Fatal(err)
	}
	d, err := fa.At(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, slot := range []uint64{0xffffffffa0000000, 0xffffffffc0123456} {
		want := kernelCopy(code[1:8], 3, addr+1, slot, false) // PREEMPTION: int3 after the copy
		whole := append(append([]byte(nil), want...), 0xcc, 0xcc, 0x11, 0x22)
		r := VerifyRecord{Func: "f", Off: 1, Boundary: true, Bytes: hex.EncodeToString(code[1:8]), Round: 1,
			Kernel: Outcome{Addr: addr + 1, Slot: hex.EncodeToString(whole), SlotAddr: slot}}
		predictSlot(pred, &r, &d)
		if r.Predicted.Slot != hex.EncodeToString(want) || r.Kernel.Slot != r.Predicted.Slot || r.Predicted.SlotAddr != slot {
			t.Errorf("slot %#x: predicted %s at %#x, kernel %s; want %x", slot, r.Predicted.Slot, r.Predicted.SlotAddr, r.Kernel.Slot, want)
		}
	}
}

func TestCompare(t *testing.T) {
	r := VerifyRecord{Predicted: Outcome{Errno: "EILSEQ"}, Kernel: Outcome{Errno: "EILSEQ"}}
	if c := r.Compare(); !c["errno"] || len(c) != 3 {
		t.Errorf("rejected both: %v", c)
	}
	r = VerifyRecord{Predicted: Outcome{Addr: 1, Ftrace: true}, Kernel: Outcome{Addr: 1, Slot: "55cc"}}
	if c := r.Compare(); !c["errno"] || !c["addr"] || c["ftrace"] || c["slot"] {
		t.Errorf("ftrace vs slot: %v", c)
	}
}

func TestSlotJumpsBack(t *testing.T) {
	// push %rbp (1 byte) probed at 0x1000, slot at 0x5000: the jmp after the
	// copy is at 0x5001 and ends at 0x5006; back to 0x1001 is 0x1001-0x5006.
	rel := uint32(0x1001 - 0x5006 + (1 << 32))
	jmp := []byte{0x55, 0xE9, byte(rel), byte(rel >> 8), byte(rel >> 16), byte(rel >> 24)}
	if !SlotJumpsBack(hex.EncodeToString(jmp), 0x5000, 0x1000, 1) {
		t.Error("jmp back not seen")
	}
	if SlotJumpsBack(hex.EncodeToString(jmp), 0x5000, 0x1004, 1) {
		t.Error("jmp elsewhere taken for a jmp back")
	}
	if SlotJumpsBack("55cc", 0x5000, 0x1000, 1) {
		t.Error("int3 taken for a jmp back")
	}
	if !SlotJumpsBack("55e9", 0x5000, 0x1000, 1) {
		t.Error("a cut-short jmp is not int3")
	}
	r := VerifyRecord{Boundary: true, Bytes: "55", Verdict: "singlestep",
		Kernel: Outcome{Addr: 0x1000, Slot: hex.EncodeToString(jmp), SlotAddr: 0x5000}}
	if c := r.Compare(); c["jmpback"] {
		t.Errorf("singlestep predicted, kernel jumps back: %v", c)
	}
	r.Verdict = "boost"
	if c, ok := r.Compare()["jmpback"]; !c || !ok {
		t.Error("boost predicted, kernel jumps back: not agreeing")
	}
}

func TestSameErrno(t *testing.T) {
	// ENOTSUP and EOPNOTSUPP are one number on Linux (the kernel returns
	// -EOPNOTSUPP for an unsupported indirect jmp; the name lookup says ENOTSUP).
	if unix.ENOTSUP != unix.EOPNOTSUPP || !sameErrno("EOPNOTSUPP", "ENOTSUP") || sameErrno("EINVAL", "EILSEQ") {
		t.Error("errno aliases")
	}
}

func TestThinBoundaries(t *testing.T) {
	var pl []Planned
	for off := uint64(0); off < 10; off++ {
		pl = append(pl, Planned{Rec: VerifyRecord{Func: "f", Off: off * 3, Boundary: true}})
		if off%4 == 1 {
			pl = append(pl, Planned{Rec: VerifyRecord{Func: "f", Off: off*3 + 1}})
		}
	}
	offs := func(ps []Planned) (b, nb []uint64) {
		for _, p := range ps {
			if p.Rec.Boundary {
				b = append(b, p.Rec.Off)
			} else {
				nb = append(nb, p.Rec.Off)
			}
		}
		return b, nb
	}
	for _, tc := range []struct {
		max  int
		want []uint64
	}{
		{0, []uint64{0, 3, 6, 9, 12, 15, 18, 21, 24, 27}},
		{10, []uint64{0, 3, 6, 9, 12, 15, 18, 21, 24, 27}},
		{20, []uint64{0, 3, 6, 9, 12, 15, 18, 21, 24, 27}},
		{4, []uint64{0, 6, 15, 21}}, // indexes 0, 2, 5, 7 of 10
		{1, []uint64{0}},
	} {
		b, nb := offs(ThinBoundaries(append([]Planned(nil), pl...), tc.max))
		if fmt.Sprint(b) != fmt.Sprint(tc.want) {
			t.Errorf("max %d: boundaries %v, want %v", tc.max, b, tc.want)
		}
		if fmt.Sprint(nb) != "[4 16 28]" {
			t.Errorf("max %d: non-boundaries %v, want all three kept", tc.max, nb)
		}
	}
}

// TestMatchListed checks how the recorder finds its probes in kprobes/list:
// at the address asked for, or moved past an endbr64 to the next listed
// address inside the function; [FTRACE] ones need no slot.
func TestMatchListed(t *testing.T) {
	const f, g uint64 = 0xffffffff81000000, 0xffffffff81000100
	fns := map[string]*x86Func{
		"f": {sym: kimage.Symbol{Name: "f", Addr: f, Size: 0x40}},
		"g": {sym: kimage.Symbol{Name: "g", Addr: g, Size: 0x40}},
	}
	p := func(fn string, addr uint64) *Planned {
		return &Planned{Rec: VerifyRecord{Func: fn, Off: addr - fns[fn].sym.Addr, Boundary: true}, Addr: addr}
	}
	ok := []*Planned{p("f", f), p("f", f+0x20), p("g", g+0x30), p("g", g+0x3c)}
	list := loader.ParseKprobesList([]byte(fmt.Sprintf("%x  k  f+0x4    [FTRACE]\n%x  k  f+0x20\n%x  k  g+0x30\n%x  k  g+0x48\n", f+4, f+0x20, g+0x30, g+0x48)))
	need := matchListed(ok, list, fns)
	if ok[0].Rec.Kernel.Addr != f+4 || !ok[0].Rec.Kernel.Ftrace {
		t.Errorf("f+0 moved past endbr64: %+v", ok[0].Rec.Kernel)
	}
	if ok[1].Rec.Kernel.Addr != f+0x20 || ok[2].Rec.Kernel.Addr != g+0x30 {
		t.Errorf("exact: %+v %+v", ok[1].Rec.Kernel, ok[2].Rec.Kernel)
	}
	if ok[3].Rec.Kernel.Addr != 0 || ok[3].Rec.Note == "" {
		t.Errorf("g+0x48 is outside g: %+v", ok[3].Rec)
	}
	if len(need) != 2 || need[0] != ok[1] || need[1] != ok[2] {
		t.Errorf("need slots: %v", need)
	}
}
