//go:build linux && amd64

package kernelsim

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

const testCodeOff, testSlotOff = 0x800, 0x400

var sandboxCache = map[*Arch]EmulatedBackend{}

// sandboxFor opens a's registered backend: the ptrace sandbox, which
// native_test.go's import of kernelsim/native registers.
func sandboxFor(t *testing.T, a *Arch) EmulatedBackend {
	t.Helper()
	if s := sandboxCache[a]; s != nil {
		return s
	}
	s, err := OpenBackend(a, Options{})
	if err != nil {
		t.Fatalf("%s sandbox: %v", a.Name, err)
	}
	if a == I386 {
		path := map[bool]string{true: "qemu", false: "cpu"}[s.Emulator() != ""]
		if want := os.Getenv("KBOOST_EXPECT_I386_EXEC"); want != "" && want != path {
			t.Fatalf("i386 --exec auto takes the %s path here, but KBOOST_EXPECT_I386_EXEC=%s", path, want)
		}
		t.Logf("i386 --exec auto: %s %s", path, s.Emulator())
	}
	sandboxCache[a] = s
	return s
}

func trials(a *Arch, n int, seed uint64) []Trial {
	rng := rand.New(rand.NewPCG(seed, 7))
	ts := make([]Trial, n)
	for i := range ts {
		a.RandomTrial(rng, &ts[i])
	}
	return ts
}

func probe(t *testing.T, a *Arch, code []byte) *Probe {
	t.Helper()
	p, err := NewProbe(a, code, testCodeOff, testSlotOff)
	if err != nil {
		t.Fatalf("decode % x: %v", code, err)
	}
	return p
}

// hits runs the hit on path for 16 random states and returns the verdicts.
func hits(t *testing.T, a *Arch, code []byte, path Path) ([]HitCheck, Verdict) {
	t.Helper()
	p := probe(t, a, code)
	hc, err := CheckHit(sandboxFor(t, a), p, path, nil, trials(a, 16, uint64(len(code))))
	if err != nil {
		t.Fatalf("% x %v: %v", code, path, err)
	}
	return hc, Summarize(hitDiffs(hc))
}

func wantVerdict(t *testing.T, a *Arch, code []byte, path Path, want Verdict) []HitCheck {
	t.Helper()
	hc, v := hits(t, a, code, path)
	if v != want {
		for _, h := range hc {
			t.Logf("  %v", h.String())
		}
		t.Errorf("%s % x via %v: %v, want %v", a.Name, code, path, v, want)
	}
	return hc
}

// ripTo encodes a RIP-relative instruction prefix+disp so that it addresses
// target when placed at the test probe address.
func ripTo(a *Arch, head []byte, tail []byte, target uint64) []byte {
	n := len(head) + 4 + len(tail)
	at := a.Layout.Orig + testCodeOff + uint64(n)
	b := append([]byte(nil), head...)
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(int64(target-at))))
	return append(b, tail...)
}

func TestHitRIPRelative(t *testing.T) {
	a := X86_64
	target := a.Layout.Scratch + 0x100
	load := ripTo(a, []byte{0x48, 0x8B, 0x05}, nil, target)  // mov target(%rip),%rax
	store := ripTo(a, []byte{0x48, 0x89, 0x0D}, nil, target) // mov %rcx,target(%rip)
	for _, code := range [][]byte{load, store} {
		hc := wantVerdict(t, a, code, PathBoost, Equivalent)
		// the CPU really accessed the scratch word (independent of the slot model)
		h := hc[0]
		word := binary.LittleEndian.Uint64(h.Trial.Scratch[0x100:])
		if code[1] == 0x8B && h.RefR.Regs.GPR[0] != word {
			t.Errorf("load: rax %#x, scratch word %#x", h.RefR.Regs.GPR[0], word)
		}
		if code[1] == 0x89 && binary.LittleEndian.Uint64(h.RefR.Scratch[0x100:]) != h.Trial.Regs.GPR[1] {
			t.Errorf("store: scratch word not rcx")
		}
		// without the fixup the copy reaches another address: it must differ
		p := probe(t, a, code)
		raw := append(append([]byte(nil), code...), 0xCC)
		hc2, err := CheckHit(sandboxFor(t, a), p, PathSingleStep, raw, trials(a, 4, 1))
		if err != nil {
			t.Fatal(err)
		}
		if hc2[0].Diff.Verdict != Diverged {
			t.Errorf("% x: unfixed copy did not diverge: %v", code, hc2[0].Diff)
		}
		// the model: slot verified, disp rebased
		m, err := NewSlotModel(Site{Code: code, Mode: a.Mode, Addr: p.Addr(), SlotAddr: p.SlotAddr(), Policy: lookup(t, "linux-6.1")})
		if err != nil || len(m.Problems) > 0 {
			t.Fatalf("slot model: %v %v", err, m.Problems)
		}
		if m.Path != PathBoost || m.JmpTarget != p.Inst.End() {
			t.Errorf("path %v jmp -> %#x", m.Path, m.JmpTarget)
		}
	}
	// beyond s32: refused, as the policy's own classification says
	p := probe(t, a, load)
	far := p.Addr() + 3<<30
	_, err := NewSlotModel(Site{Code: load, Mode: a.Mode, Addr: p.Addr(), SlotAddr: far, Policy: lookup(t, "linux-6.1")})
	var re *SlotRangeError
	if !errors.As(err, &re) {
		t.Fatalf("slot 3 GiB away: %v, want SlotRangeError", err)
	}
	if _, err := BuildSlot(&p.Inst, far-(3<<30)+(1<<30), PathBoost); err != nil {
		t.Errorf("slot 1 GiB away refused: %v", err)
	}
}

func lookup(t *testing.T, name string) *boost.Policy {
	p, err := boost.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHitBranches(t *testing.T) {
	for _, a := range []*Arch{X86_64, I386} {
		call := []byte{0xE8, 0x10, 0, 0, 0}
		hc := wantVerdict(t, a, call, PathBoost, Diverged)
		if !slices.ContainsFunc(hc[0].Diff.Fields, func(f string) bool { return strings.HasPrefix(f, "stack") }) {
			t.Errorf("%s boosted call: %v, want the return address on the stack to differ", a.Name, hc[0].Diff)
		}
		wantVerdict(t, a, call, PathEmulate, Equivalent)
		jcc := []byte{0x74, 0x10}
		wantVerdict(t, a, jcc, PathBoost, Diverged)
		wantVerdict(t, a, jcc, PathEmulate, Equivalent)
		wantVerdict(t, a, []byte{0x0F, 0x85, 0x20, 0, 0, 0}, PathEmulate, Equivalent)
		wantVerdict(t, a, []byte{0xEB, 0x08}, PathEmulate, Equivalent)
		wantVerdict(t, a, []byte{0xC3}, PathEmulate, Equivalent)
		// the kernel's emulated ret imm16 does not release the immediate
		hc = wantVerdict(t, a, []byte{0xC2, 0x08, 0x00}, PathEmulate, Diverged)
		if !slices.Contains(hc[0].Diff.Fields, a.RegNames[rSP]) {
			t.Errorf("%s ret $8: %v, want the stack pointer to differ", a.Name, hc[0].Diff)
		}
		wantVerdict(t, a, []byte{0xFF, 0xD0}, PathEmulate, Equivalent) // call *%eax
		wantVerdict(t, a, []byte{0xFF, 0xE1}, PathEmulate, Equivalent) // jmp *%ecx
		wantVerdict(t, a, []byte{0xE2, 0x04}, PathEmulate, Equivalent) // loop
	}
}

func TestHitStraightLine(t *testing.T) {
	for _, a := range []*Arch{X86_64, I386} {
		for _, code := range [][]byte{
			{0x53},                   // push %ebx
			{0x5A},                   // pop %edx
			{0x89, 0xC8},             // mov %ecx,%eax
			{0x8B, 0x03},             // mov (%ebx),%eax
			{0x89, 0x0E},             // mov %ecx,(%esi)
			{0x8D, 0x44, 0x8B, 0x08}, // lea 8(%ebx,%ecx,4),%eax
		} {
			wantVerdict(t, a, code, PathBoost, Equivalent)
			wantVerdict(t, a, code, PathSingleStep, Equivalent)
		}
		wantVerdict(t, a, []byte{0x9C}, PathEmulate, Equivalent) // pushf
		wantVerdict(t, a, []byte{0x9D}, PathEmulate, Equivalent) // popf
		wantVerdict(t, a, []byte{0x9C}, PathBoost, Equivalent)
		wantVerdict(t, a, []byte{0xFA}, PathEmulate, NotVerifiable) // cli
	}
	wantVerdict(t, X86_64, []byte{0x48, 0x8D, 0x44, 0x8B, 0x08}, PathBoost, Equivalent)
}

// TestHitBoostLimit: a 10-byte instruction is the longest 6.1 boosts (its
// slot fills MAX_INSN_SIZE); an 11-byte one is single-stepped.
func TestHitBoostLimit(t *testing.T) {
	a := X86_64
	pol := lookup(t, "linux-6.1")
	ten := []byte{0x48, 0xB8, 1, 2, 3, 4, 5, 6, 7, 8} // movabs $imm64,%rax
	eleven := append([]byte{0x3E}, ten...)
	for _, tc := range []struct {
		code []byte
		path Path
	}{{ten, PathBoost}, {eleven, PathSingleStep}} {
		p := probe(t, a, tc.code)
		m, err := NewSlotModel(Site{Code: tc.code, Mode: a.Mode, Addr: p.Addr(), SlotAddr: p.SlotAddr(), Policy: pol})
		if err != nil || len(m.Problems) > 0 {
			t.Fatalf("% x: %v %v", tc.code, err, m.Problems)
		}
		if m.Path != tc.path {
			t.Errorf("% x: path %v, want %v", tc.code, m.Path, tc.path)
		}
		if len(tc.code) == 10 && len(m.Slot) != pol.MaxInsnSize {
			t.Errorf("10-byte slot is %d bytes, want MAX_INSN_SIZE %d", len(m.Slot), pol.MaxInsnSize)
		}
		wantVerdict(t, a, tc.code, m.Path, Equivalent)
	}
	// an 11-byte boosted slot would overflow the 15-byte slot
	p := probe(t, a, eleven)
	s, _ := BuildSlot(&p.Inst, p.SlotAddr(), PathBoost)
	m := &SlotModel{Site: Site{Policy: pol, SlotAddr: p.SlotAddr()}, Inst: p.Inst, Slot: s, JmpAt: -1, Int3At: -1}
	if pr := m.Verify(); len(pr) == 0 || !strings.Contains(pr[0], "MAX_INSN_SIZE") {
		t.Errorf("11-byte boosted slot: %v", pr)
	}
}

// TestLazy2006 replays the 2006 booster: the first hit single-steps and
// writes the jmp, the later hits run the slot directly; every hit must agree
// with the CPU's in-place run.
func TestLazy2006(t *testing.T) {
	a := I386
	s := sandboxFor(t, a)
	for _, code := range [][]byte{{0x89, 0xC8}, {0x53}, {0x8D, 0x44, 0x8B, 0x08}} {
		p := probe(t, a, code)
		hs, err := Lazy2006(s, p, 3, trials(a, 8, 3))
		if err != nil {
			t.Fatal(err)
		}
		want := []struct {
			path          boost.HitPath
			before, after boost.BoostState
		}{
			{boost.HitSingleStep, boost.BoostCandidate, boost.BoostOn},
			{boost.HitBoosted, boost.BoostOn, boost.BoostOn},
			{boost.HitBoosted, boost.BoostOn, boost.BoostOn},
		}
		for i, h := range hs {
			if h.Path != want[i].path || h.Before != want[i].before || h.After != want[i].after {
				t.Errorf("% x hit %d: %v %v->%v", code, i+1, h.Path, h.Before, h.After)
			}
			if i > 0 && h.JmpAt != len(code) {
				t.Errorf("% x hit %d: jmp at %d", code, i+1, h.JmpAt)
			}
			for _, c := range h.Checks {
				if c.Diff.Verdict != Equivalent {
					t.Errorf("% x hit %d (%v): %v", code, i+1, h.Path, c.String())
				}
			}
		}
	}
	// jcc is never boosted in 2006 (state -1)
	p := probe(t, a, []byte{0x74, 0x00})
	hs, err := Lazy2006(s, p, 2, trials(a, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	if hs[1].Path != boost.HitSingleStep || hs[1].After != boost.BoostNever {
		t.Errorf("2006 jcc: %v %v", hs[1].Path, hs[1].After)
	}
}

func TestEmulateJcc(t *testing.T) {
	// int3_emulate_jcc against the SDM's condition table
	conds := []func(f uint64) bool{
		func(f uint64) bool { return f&FlagOF != 0 },
		func(f uint64) bool { return f&FlagCF != 0 },
		func(f uint64) bool { return f&FlagZF != 0 },
		func(f uint64) bool { return f&(FlagCF|FlagZF) != 0 },
		func(f uint64) bool { return f&FlagSF != 0 },
		func(f uint64) bool { return f&FlagPF != 0 },
		func(f uint64) bool { return (f&FlagSF != 0) != (f&FlagOF != 0) },
		func(f uint64) bool { return f&FlagZF != 0 || (f&FlagSF != 0) != (f&FlagOF != 0) },
	}
	for cc := byte(0); cc < 16; cc++ {
		for f := uint64(0); f < 1<<12; f++ {
			want := conds[cc/2](f) != (cc&1 != 0)
			if jccTaken(cc, f) != want {
				t.Fatalf("cc %x flags %#x", cc, f)
			}
		}
	}
	_ = decode.Mode64
}

// hitDiffs lists the checks' diffs.
func hitDiffs(hc []HitCheck) []Diff {
	ds := make([]Diff, len(hc))
	for i := range hc {
		ds[i] = hc[i].Diff
	}
	return ds
}
