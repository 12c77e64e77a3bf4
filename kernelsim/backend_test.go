package kernelsim

import (
	"errors"
	"slices"
	"testing"

	"github.com/kboost/kboost/decode"
)

func TestCompare(t *testing.T) {
	a := X86_64
	base := Result{Outcome: Completed, Stack: make([]byte, 16), Scratch: make([]byte, 16)}
	base.Regs.GPR[rAX] = 1
	mk := func(f func(r *Result)) Result {
		r := base
		r.Stack = slices.Clone(base.Stack)
		r.Scratch = slices.Clone(base.Scratch)
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name   string
		cand   Result
		want   Verdict
		fields []string
	}{
		{"same", mk(func(r *Result) {}), Equivalent, nil},
		{"reg", mk(func(r *Result) { r.Regs.GPR[rBX] = 2 }), Diverged, []string{"rbx"}},
		{"flags", mk(func(r *Result) { r.Regs.Flags = FlagCF }), Diverged, []string{"flags"}},
		{"rf ignored", mk(func(r *Result) { r.Regs.Flags = FlagRF | FlagIF }), Equivalent, nil},
		{"stack", mk(func(r *Result) { r.Stack[9] = 1 }), Diverged, []string{"stack+0x8"}},
		{"timeout", mk(func(r *Result) { r.Outcome = TimedOut }), Inconclusive, nil},
		{"fault", mk(func(r *Result) { r.Outcome = Faulted; r.Fault = Fault{Signal: SIGSEGV} }), Diverged, []string{"outcome"}},
	} {
		d := a.Compare(&base, &tc.cand, nil)
		if d.Verdict != tc.want || (tc.fields != nil && !slices.Equal(d.Fields, tc.fields)) {
			t.Errorf("%s: %v, want %v %v", tc.name, d, tc.want, tc.fields)
		}
	}
	// privileged instruction on both sides
	gp := Result{Outcome: Faulted, Fault: Fault{Signal: SIGSEGV, Code: SIKernel, Trap: 13}}
	if d := a.Compare(&gp, &gp, nil); d.Verdict != NotVerifiable {
		t.Errorf("#GP/#GP: %v", d)
	}
	// a fault address in the slot maps back to the original code
	f1 := Result{Outcome: Faulted, Fault: Fault{Signal: SIGSEGV, Code: 2, Addr: 0x1000}}
	f2 := Result{Outcome: Faulted, Fault: Fault{Signal: SIGSEGV, Code: 2, Addr: 0x9000}}
	m := func(x uint64) uint64 {
		if x >= 0x9000 && x < 0xA000 {
			return x - 0x8000
		}
		return x
	}
	if d := a.Compare(&f1, &f2, m); d.Verdict != Equivalent {
		t.Errorf("mapped fault address: %v", d)
	}
	if d := a.Compare(&f1, &f2, nil); d.Verdict != Diverged {
		t.Errorf("unmapped fault address: %v", d)
	}
}

func TestJmpRel32(t *testing.T) {
	b, err := JmpRel32(0x1000, 0x1005)
	if err != nil || !slices.Equal(b, []byte{0xE9, 0, 0, 0, 0}) {
		t.Errorf("%x %v", b, err)
	}
	b, err = JmpRel32(0x1000, 0x1000)
	if err != nil || !slices.Equal(b, []byte{0xE9, 0xFB, 0xFF, 0xFF, 0xFF}) {
		t.Errorf("%x %v", b, err)
	}
	if _, err := JmpRel32(0, 1<<40); !errors.Is(err, ErrBadCase) {
		t.Errorf("far jump: %v", err)
	}
}

func TestLayoutCheck(t *testing.T) {
	for _, a := range []*Arch{X86_64, I386} {
		if err := a.Layout.Check(a); err != nil {
			t.Errorf("%s default layout: %v", a.Name, err)
		}
		bad := a.Layout
		bad.Slot = bad.Orig + PageSize // the page that must stay unmapped
		if err := bad.Check(a); !errors.Is(err, ErrBadCase) {
			t.Errorf("%s: slot right after the code accepted: %v", a.Name, err)
		}
		bad = a.Layout
		bad.Scratch++
		if err := bad.Check(a); !errors.Is(err, ErrBadCase) {
			t.Errorf("%s: unaligned scratch accepted: %v", a.Name, err)
		}
	}
}

// Every sandbox's default layout is valid, its register size is the
// decoder's pointer size, and a 32-bit sandbox refuses pages at 1 GiB and
// above (qemu-user's own mappings are there).
func TestArchWords(t *testing.T) {
	for _, a := range Arches {
		if err := a.Layout.Check(a); err != nil {
			t.Errorf("%s default layout: %v", a.Name, err)
		}
		d := decode.ArchOf(a.Mode)
		if got := a.PtrSize(); got != uint64(d.PtrSize) {
			t.Errorf("%s: PtrSize %d, decode says %d", a.Name, got, d.PtrSize)
		}
		high := a.Layout
		high.Scratch = 0x4000_0000
		if err := high.Check(a); (err != nil) != (d.PtrSize == 4) {
			t.Errorf("%s: scratch page at 1 GiB: %v", a.Name, err)
		}
	}
}
