package boost

import (
	"slices"
	"testing"

	"github.com/kboost/kboost/decode"
)

// A function as GCC emits it for a Debian arm64 kernel with BTI and
// DYNAMIC_FTRACE_WITH_REGS, after ftrace_init_nop: bti c; mov x9, x30; nop
// (the ftrace location: ftrace_call_adjust() = entry + 4); paciasp; ...
var a64TestFunc = []uint32{
	0xD503245F, // bti c
	0xAA1E03E9, // mov x9, x30
	0xD503201F, // nop (becomes bl ftrace_caller)
	0xD503233F, // paciasp
	0xA9BF7BFD, // stp x29, x30, [sp, #-16]!
	0x910003FD, // mov x29, sp
	0xC85F7C20, // ldxr x0, [x1]
	0x91000400, // add x0, x0, #1
	0xC8027C20, // stxr w2, x0, [x1]
	0x35FFFFA2, // cbnz w2, .-12
	0xA8C17BFD, // ldp x29, x30, [sp], #16
	0xD50323BF, // autiasp
	0xD65F03C0, // ret
}

const a64FuncAddr = 0xffff800008100000

func a64Audit(t *testing.T, p *Policy, env *Env) *FuncAudit {
	t.Helper()
	a, err := auditA64Test(p, env, Func{Name: "do_thing", Addr: a64FuncAddr, Bytes: a64Bytes(a64TestFunc...)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func a64At(t *testing.T, a *FuncAudit, off uint64) Decision {
	t.Helper()
	d, err := a.At(off)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func wantA64(t *testing.T, what string, d Decision, v Verdict, rule string) {
	t.Helper()
	if d.Verdict != v || !slices.Contains(d.ReasonIDs(), rule) {
		t.Errorf("%s: got %v, want %v with %s", what, &d, v, rule)
	}
}

func TestA64FtraceSite(t *testing.T) {
	if off, ok := FtraceEntrySiteA64(a64TestFunc); !ok || off != 8 {
		t.Fatalf("FtraceEntrySiteA64 = %d, %v; want 8 (after BTI c and mov x9, x30)", off, ok)
	}
	if off, ok := FtraceEntrySiteA64([]uint32{0xD503201F, 0x94000123, 0xD65F03C0}); !ok || off != 4 {
		t.Fatalf("nop; bl: %d, %v; want 4", off, ok)
	}
	if _, ok := FtraceEntrySiteA64([]uint32{0xD503233F, 0xD503201F}); ok {
		t.Fatal("paciasp; nop taken for an ftrace site")
	}
	p := linux61ARM64
	a := a64Audit(t, p, p.DefaultEnv())
	if a.FtraceOff != 8 || a.FtraceFrom != "bytes" {
		t.Fatalf("FtraceOff %d from %q", a.FtraceOff, a.FtraceFrom)
	}
	wantA64(t, "sym+8 (ftrace BL)", a64At(t, a, 8), Reject, rFtraceNoKOF.ID)
	wantA64(t, "sym+0 (bti c)", a64At(t, a, 0), SingleStep, rA64Slot.ID)
	wantA64(t, "sym+4 (mov x9, x30)", a64At(t, a, 4), SingleStep, rA64Slot.ID)
	wantA64(t, "sym+2", a64At(t, a, 2), Reject, rA64Align.ID)

	// From a table: the site and notrace.
	env := p.DefaultEnv()
	env.Sites = &StaticSites{FtraceLocs: NewAddrTable([]uint64{a64FuncAddr + 8})}
	a = a64Audit(t, p, env)
	if a.FtraceOff != 8 || a.FtraceFrom != "table" || a.Notrace {
		t.Fatalf("table: FtraceOff %d from %q notrace %v", a.FtraceOff, a.FtraceFrom, a.Notrace)
	}
	env.Sites = &StaticSites{FtraceLocs: NewAddrTable([]uint64{0x1000})}
	a = a64Audit(t, p, env)
	wantA64(t, "notrace function", a64At(t, a, 20), Reject, rNotrace.ID)
	env.Config.DirectRegister = true
	a = a64Audit(t, p, env)
	wantA64(t, "notrace function, register_kprobe", a64At(t, a, 20), SingleStep, rA64Slot.ID)
}

func TestA64AuditRules(t *testing.T) {
	p := linux61ARM64
	a := a64Audit(t, p, p.DefaultEnv())
	wantA64(t, "ldxr", a64At(t, a, 24), Reject, rA64NSExclusive.ID)
	wantA64(t, "add inside ldxr/stxr", a64At(t, a, 28), Reject, rA64Atomic.ID)
	wantA64(t, "cbnz after stxr", a64At(t, a, 36), Emulate, rA64SimCBZ.ID)
	wantA64(t, "autiasp", a64At(t, a, 44), Reject, rA64NSHint.ID)
	wantA64(t, "ret", a64At(t, a, 48), Emulate, rA64SimBR.ID)
	steps, d, err := explainAtA64(a, 28) // FuncAudit.ExplainAt once hooked
	if err != nil || d.Verdict != Reject || len(steps) == 0 || steps[len(steps)-1].Rule != rA64Atomic.ID {
		t.Errorf("ExplainAt(28): %v %v %v", steps, &d, err)
	}

	env := p.DefaultEnv()
	env.Sites = &StaticSites{Blacklist: []BlacklistRange{{Span: Span{a64FuncAddr, a64FuncAddr + 52}, Kind: BlacklistEntry}}, BlacklistKnown: true}
	a = a64Audit(t, p, env)
	wantA64(t, "entry text", a64At(t, a, 20), Reject, rBlEntry.ID)
	env.Sites = &StaticSites{ExTableAddrs: NewAddrTable([]uint64{a64FuncAddr + 20})}
	a = a64Audit(t, p, env)
	wantA64(t, "exception table", a64At(t, a, 20), Reject, rA64ExTable.ID)
	wantA64(t, "next to the exception-table entry", a64At(t, a, 16), SingleStep, rA64Slot.ID)
}

func TestA64BoostModel(t *testing.T) {
	p := boostARM64
	env := p.DefaultEnv()
	env.SlotAddr = a64FuncAddr - 100<<20 // 100 MiB below: in range
	a := a64Audit(t, p, env)
	d := a64At(t, a, 20) // mov x29, sp
	wantA64(t, "mov x29, sp", d, Boost, rBBoost.ID)
	checkA64BoostedAt(t, 0x910003FD, &d, env.SlotAddr)
	wantA64(t, "paciasp", a64At(t, a, 12), Boost, rBBoost.ID)
	wantA64(t, "add inside ldxr/stxr", a64At(t, a, 28), Reject, rA64Atomic.ID)

	env.SlotAddr = a64FuncAddr - 200<<20 // beyond B's reach
	a = a64Audit(t, p, env)
	wantA64(t, "slot 200 MiB away", a64At(t, a, 20), SingleStep, rBRange.ID)
	env.SlotAddr = a64FuncAddr - 100<<20
	env.Config.Preemption = true
	a = a64Audit(t, p, env)
	wantA64(t, "PREEMPTION", a64At(t, a, 20), SingleStep, rBPreempt.ID)
	env.Config.Preemption, env.Config.PostHandler = false, true
	a = a64Audit(t, p, env)
	wantA64(t, "post_handler", a64At(t, a, 20), SingleStep, rBPostH.ID)

	// The gaps, one word each.
	for _, c := range []struct {
		w    uint32
		v    Verdict
		rule *rule
	}{
		{0x54000010, Emulate, rBGapBC}, {0x5C000040, Reject, rBGapFPLit}, {0x00000000, Reject, rBGapUnalloc},
		{0xD6BF03E0, Reject, rBGapBranch}, {0x1D000400, Reject, rBGapMOPS},
	} {
		d := p.ClassifyBytesEnv(a64Bytes(c.w), decode.ModeA64, a64FuncAddr, p.DefaultEnv())
		wantA64(t, c.rule.ID, d, c.v, c.rule.ID)
		k := linux61ARM64.ClassifyBytesEnv(a64Bytes(c.w), decode.ModeA64, a64FuncAddr, nil)
		if k.Verdict != SingleStep {
			t.Errorf("%08x: the kernel does not step it (%v): not a gap", c.w, &k)
		}
	}
}

func checkA64BoostedAt(t *testing.T, w uint32, d *Decision, slot uint64) {
	t.Helper()
	b := d.SlotBytes()
	br := uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24
	off := int64(int32(br<<6)>>6) * 4
	if slot+4+uint64(off) != d.Addr+4 {
		t.Errorf("%08x: B at slot+4 lands at %#x, want %#x", w, slot+4+uint64(off), d.Addr+4)
	}
}
