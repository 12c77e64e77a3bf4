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

// testPredictor predicts with linux-6.1 under Debian's defaults, without a file.
func testPredictor(t *testing.T) *Predictor {
	t.Helper()
	pol, err := boost.Lookup("linux-6.1")
	if err != nil {
		t.Fatal(err)
	}
	env := pol.DefaultEnv()
	return &Predictor{loader.NewPredictorEnv(nil, pol, env, nil)}
}

// TestSlotImageRIPRelative checks the slot of a RIP-relative load against the
// kernel's rebasing formula computed here: new disp = addr + disp - slot.
func TestSlotImageRIPRelative(t *testing.T) {
	p := testPredictor(t)
	const addr = 0xffffffff81000000
	// push %rbp; mov 0x1234(%rip),%rax; ret
	code := []byte{0x55, 0x48, 0x8b, 0x05, 0x34, 0x12, 0x00, 0x00, 0xc3}
	pls, err := p.PredictFunc(kimage.Symbol{Name: "f", Addr: addr, Size: uint64(len(code))}, code, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(pls) != 3 || pls[1].Rec.Off != 1 {
		t.Fatalf("boundaries %+v", pls)
	}
	for _, slot := range []uint64{0xffffffffa0000000, 0xffffffffc0123456} {
		img := p.SlotImage(&pls[1], slot)
		disp := uint32(uint64(addr) + 1 + 0x1234 - slot)   // both RIPs are 7 bytes on
		want := []byte{0x48, 0x8b, 0x05, 0, 0, 0, 0, 0xcc} // PREEMPTION: int3 after the copy
		binary.LittleEndian.PutUint32(want[3:], disp)
		if hex.EncodeToString(img) != hex.EncodeToString(want) {
			t.Errorf("slot %#x: %x, want %x", slot, img, want)
		}
	}
	// MatchSlots finds the slot on a page, ignoring unchanged slots first.
	page := uint64(0xffffffffa0001000)
	before := SlotPages{page: make([]byte, 4096)}
	after := SlotPages{page: make([]byte, 4096)}
	for i := range after[page] {
		after[page][i] = 0xcc
		before[page][i] = 0xcc
	}
	copy(after[page][3*SlotSize:], p.SlotImage(&pls[1], page+3*SlotSize))
	// A decoy before it: the same instruction rebased for another slot.
	copy(after[page][1*SlotSize:], p.SlotImage(&pls[1], page+7*SlotSize))
	copy(after[page][5*SlotSize:], []byte{0x55, 0xcc})
	probes := []*Planned{&pls[1], &pls[0]}
	p.MatchSlots(probes, before, after)
	if pls[1].Rec.Kernel.SlotAddr != page+3*SlotSize || pls[1].Rec.Kernel.Slot != pls[1].Rec.Predicted.Slot {
		t.Errorf("mov: %+v", pls[1].Rec)
	}
	if pls[0].Rec.Kernel.SlotAddr != page+5*SlotSize || pls[0].Rec.Kernel.Slot != "55cc" {
		t.Errorf("push: %+v", pls[0].Rec)
	}
	// A wrong byte in the kernel's slot is a disagreement, not hidden.
	pls[1].Rec.Kernel, pls[1].Rec.Predicted.Slot = Outcome{}, ""
	after[page][3*SlotSize+3] ^= 0xff
	p.MatchSlots([]*Planned{&pls[1]}, before, after)
	if c := pls[1].Rec.Compare(); c["slot"] {
		t.Errorf("corrupted slot agrees: %+v", pls[1].Rec)
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
