package ptprobe

import (
	"errors"
	"strings"
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

const (
	fnAddr  = 0x401000
	slotAt  = 0x400000
	counter = slotAt + PageSize
)

func policy(t testing.TB) *boost.Policy {
	p, err := boost.Lookup(PolicyName)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func fn(b ...byte) boost.Func {
	return boost.Func{Name: "f", Addr: fnAddr, Size: uint64(len(b)), Bytes: b}
}

// sweep decodes code at addr into instructions (kboost's decoder is the
// oracle for the bytes ptprobe assembles).
func sweep(t testing.TB, code []byte, addr uint64) []decode.Inst {
	t.Helper()
	var out []decode.Inst
	for off := 0; off < len(code); {
		var in decode.Inst
		if err := decode.DecodeInto(&in, code[off:], decode.Mode64, addr+uint64(off)); err != nil {
			t.Fatalf("% x at +%d: %v", code, off, err)
		}
		out = append(out, in)
		off += in.Len
	}
	return out
}

// prologue: push %rbp; mov %rsp,%rbp; sub $0x10,%rsp; mov 0x10(%rip),%rax; ret
var prologue = []byte{0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0x48, 0x8b, 0x05, 0x10, 0, 0, 0, 0xc3}

func TestPlanJump(t *testing.T) {
	s, err := Plan(policy(t), fn(prologue...), 0, Jump, slotAt, counter)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode != Jump || s.Displaced != 8 {
		t.Fatalf("mode %v displaced %d (%v), want a jump over push, mov, sub (8 bytes)", s.Mode, s.Displaced, s.Reasons)
	}
	p := sweep(t, s.Patch, fnAddr)
	if len(p) != 1 || p[0].Branch != decode.BranchJmp || p[0].Target != slotAt {
		t.Fatalf("patch % x is not jmp %#x", s.Patch, slotAt)
	}
	insts := sweep(t, s.Code, slotAt)
	// lea -0x80(%rsp),%rsp; push %rax; seto %al; lahf; lock incq counter(%rip);
	// add $0x7f,%al; sahf; pop %rax; lea 0x80(%rsp),%rsp; the three copies; jmp back
	if len(insts) != 13 {
		t.Fatalf("trampoline % x: %d instructions, want 13", s.Code, len(insts))
	}
	inc := insts[4]
	if !inc.RIPRel || uint64(int64(inc.End())+inc.Disp) != counter || inc.Prefixes&decode.PfxLock == 0 {
		t.Errorf("fifth instruction % x does not lock-increment the counter at %#x", inc.Bytes(), counter)
	}
	for i, want := range [][]byte{{0x55}, {0x48, 0x89, 0xe5}, {0x48, 0x83, 0xec, 0x10}} {
		if got := insts[9+i].Bytes(); string(got) != string(want) {
			t.Errorf("copy %d is % x, want % x", i, got, want)
		}
	}
	if j := insts[12]; j.Branch != decode.BranchJmp || j.Target != fnAddr+8 {
		t.Errorf("trampoline ends with % x, want jmp %#x", j.Bytes(), fnAddr+8)
	}
	if string(s.Orig) != string(prologue[:8]) {
		t.Errorf("orig % x", s.Orig)
	}
}

func TestPlanBoostAndSingleStep(t *testing.T) {
	p := policy(t)
	s, err := Plan(p, fn(prologue...), 0, Boost, slotAt, counter)
	if err != nil {
		t.Fatal(err)
	}
	insts := sweep(t, s.Code, slotAt)
	if s.Mode != Boost || len(insts) != 2 || insts[0].Bytes()[0] != 0x55 || insts[1].Target != fnAddr+1 {
		t.Errorf("boost of push %%rbp: %v % x, want push then jmp %#x", s.Mode, s.Code, fnAddr+1)
	}
	if string(s.Patch) != "\xcc" || s.Orig[0] != 0x55 {
		t.Errorf("patch % x orig % x", s.Patch, s.Orig)
	}
	s, err = Plan(p, fn(prologue...), 0, SingleStep, slotAt, counter)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode != SingleStep || string(s.Code) != "\x55\xcc" || s.Int3At() != slotAt+1 {
		t.Errorf("singlestep: %v % x int3 at %#x", s.Mode, s.Code, s.Int3At())
	}
}

// The RIP-relative load's copy still reads the original address.
func TestPlanRIPRelative(t *testing.T) {
	s, err := Plan(policy(t), fn(prologue...), 8, Boost, slotAt, counter)
	if err != nil {
		t.Fatal(err)
	}
	in := sweep(t, s.Code, slotAt)[0]
	want := uint64(fnAddr + 8 + 7 + 0x10)
	if !in.RIPRel || uint64(int64(in.End())+in.Disp) != want {
		t.Errorf("slot copy % x addresses %#x, want %#x", in.Bytes(), uint64(int64(in.End())+in.Disp), want)
	}
	// a slot out of rel32 reach of the operand: no mechanism can copy it
	_, err = Plan(policy(t), fn(prologue...), 8, Boost, fnAddr+3<<30, fnAddr+3<<30+PageSize)
	if !errors.Is(err, ErrPoint) {
		t.Errorf("slot 3 GiB away: %v, want ErrPoint", err)
	}
}

func TestPlanFallbacks(t *testing.T) {
	p := policy(t)
	// jmp .+2; mov %rdi,%rax; dec %rdi; jg -5; ret (the loop's target is +5)
	b := []byte{0xeb, 0x00, 0x48, 0x89, 0xf8, 0x48, 0xff, 0xcf, 0x7f, 0xfb, 0xc3}
	s, err := Plan(p, fn(b...), 0, Jump, slotAt, counter)
	if err != nil || s.Mode != Emulate {
		t.Errorf("jmp at the entry: %v %v, want emulate", s.Mode, err)
	}
	s, err = Plan(p, fn(b...), 2, Jump, slotAt, counter)
	if err != nil || s.Mode != Boost || !strings.Contains(strings.Join(s.Reasons, " "), "can_optimize.jump_into") {
		t.Errorf("+2 with a branch target at +5: %v %v %v, want boost after can_optimize.jump_into", s.Mode, s.Reasons, err)
	}
	if _, err := Plan(p, fn(b...), 3, Boost, slotAt, counter); !errors.Is(err, ErrPoint) {
		t.Errorf("mid-instruction: %v, want ErrPoint", err)
	}
	if _, err := ParseMode("fast"); !errors.Is(err, ErrPoint) {
		t.Errorf("ParseMode: %v", err)
	}
}

// FuzzPlan: any function bytes, offset and mode plan without panicking;
// a refusal wraps ErrPoint, and what is planned holds together: the patch
// replaces the original bytes, and the slot code ends where it must.
func FuzzPlan(f *testing.F) {
	f.Add(prologue, uint8(0), uint8(Jump))
	f.Add([]byte{0xeb, 0x00, 0x48, 0x89, 0xf8, 0x48, 0xff, 0xcf, 0x7f, 0xfb, 0xc3}, uint8(2), uint8(Jump))
	f.Add([]byte{0x48, 0x8b, 0x05, 0x10, 0, 0, 0, 0xc3}, uint8(0), uint8(Boost))
	p := policy(f)
	f.Fuzz(func(t *testing.T, b []byte, off, mode uint8) {
		if len(b) == 0 || int(off) >= len(b) || len(b) > 512 {
			return
		}
		m := Mode(mode % 3)
		s, err := Plan(p, fn(b...), uint64(off), m, slotAt, counter)
		if err != nil {
			if !errors.Is(err, ErrPoint) {
				t.Fatalf("error %v does not wrap ErrPoint", err)
			}
			return
		}
		if string(s.Orig) != string(b[off:int(off)+s.Displaced]) || len(s.Patch) > s.Displaced {
			t.Fatalf("orig % x patch % x displaced %d", s.Orig, s.Patch, s.Displaced)
		}
		if len(s.Code) > AreaSize {
			t.Fatalf("code of %d bytes", len(s.Code))
		}
		switch s.Mode {
		case Jump, Boost:
			last := s.Code[len(s.Code)-5:]
			var in decode.Inst
			at := slotAt + uint64(len(s.Code)-5)
			if decode.DecodeInto(&in, last, decode.Mode64, at) != nil || in.Branch != decode.BranchJmp || in.Target != s.Addr+uint64(max(s.Displaced, s.Len)) {
				t.Fatalf("%v code % x does not end in a jmp back", s.Mode, s.Code)
			}
		case SingleStep:
			if s.Code[len(s.Code)-1] != 0xcc || len(s.Code) != s.Len+1 {
				t.Fatalf("singlestep code % x", s.Code)
			}
		}
	})
}

// TestRecordRoutine: the record routine's RIP-relative operands reach the
// ring's head, tail and dropped words and the code page's ring pointer and
// pid; its jae goes to the dropped count; a recording trampoline calls it
// with the probe's index (decoded by kboost's decoder; the live tests run
// it on the CPU).
func TestRecordRoutine(t *testing.T) {
	code, ctr := uint64(slotAt), uint64(counter)
	insts := sweep(t, routine(code, ctr, true), code+RecordAt)
	want := map[uint64]bool{ctr + headOff: true, ctr + tailOff: true, ctr + droppedOff: true, code + ringPtrAt: true, code + PidAt: true}
	seen := map[uint64]bool{}
	var jae, drop uint64
	for _, in := range insts {
		if in.RIPRel {
			a := uint64(int64(in.End()) + in.Disp)
			if !want[a] {
				t.Errorf("% x reaches %#x, none of the ring's words", in.Bytes(), a)
			}
			seen[a] = true
			if a == ctr+droppedOff {
				drop = in.Addr
			}
		}
		if in.Branch == decode.BranchJcc {
			jae = in.Target
		}
	}
	if len(seen) != len(want) || jae == 0 || jae != drop {
		t.Errorf("words reached %v (want %d), jae to %#x, the dropped count at %#x", seen, len(want), jae, drop)
	}
	s, err := PlanAt(policy(t), fn(prologue...), 0, Jump, Slots{Code: slotAt, Counter: counter, Record: slotAt + RecordAt, Probe: 5})
	if err != nil || !s.Recorded {
		t.Fatalf("%v (recorded %v)", err, s.Recorded)
	}
	var calls int
	for _, in := range sweep(t, s.Code, slotAt) {
		if in.Branch == decode.BranchCall {
			calls++
			if in.Target != slotAt+RecordAt {
				t.Errorf("the trampoline calls %#x, the routine is at %#x", in.Target, slotAt+RecordAt)
			}
		}
	}
	if calls != 1 {
		t.Errorf("%d calls in the trampoline % x", calls, s.Code)
	}
}
