package boost

import (
	"testing"

	"github.com/kboost/kboost/decode"
)

// testFuncSrc is the function below in GNU as syntax; TestOracleAssembledFunc
// (KBOOST_ORACLE=1) assembles it and checks testFuncBytes and the boundaries
// against as and objdump.
const testFuncSrc = `
	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00 /* the 5-byte nop objtool writes at fentry sites */
	push %rbp
	mov %rsp,%rbp
	mov 0x10(%rip),%rax
	test %eax,%eax
	je 1f
	inc %rax
1:	pop %rbp
	ret
`

// testFuncBytes, checked with `objdump -D -b binary -m i386:x86-64`:
//
//	 0: 0f 1f 44 00 00        nopl   0x0(%rax,%rax,1)   (fentry site)
//	 5: 55                    push   %rbp
//	 6: 48 89 e5              mov    %rsp,%rbp
//	 9: 48 8b 05 10 00 00 00  mov    0x10(%rip),%rax
//	10: 85 c0                 test   %eax,%eax
//	12: 74 03                 je     0x17
//	14: 48 ff c0              inc    %rax
//	17: 5d                    pop    %rbp
//	18: c3                    ret
var testFuncBytes = []byte{0x0f, 0x1f, 0x44, 0x00, 0x00, 0x55, 0x48, 0x89, 0xe5,
	0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00, 0x85, 0xc0, 0x74, 0x03, 0x48, 0xff, 0xc0, 0x5d, 0xc3}

var testFuncOffsets = []uint64{0x0, 0x5, 0x6, 0x9, 0x10, 0x12, 0x14, 0x17, 0x18}

const testFuncAddr = 0xffffffff81100000

type auditWant struct {
	off     uint64
	verdict Verdict
	errno   Errno
	rule    string // deciding rule
	opt     bool
	optRule string // first opt reason
	optLen  int
}

func checkAudit(t *testing.T, a *FuncAudit, wants []auditWant) {
	t.Helper()
	for _, w := range wants {
		d, err := a.At(w.off)
		if err != nil {
			t.Errorf("+%#x: %v", w.off, err)
			continue
		}
		last := ""
		if n := len(d.Reasons); n > 0 {
			last = d.Reasons[n-1].Rule
		}
		opt0 := ""
		if len(d.OptReasons) > 0 {
			opt0 = d.OptReasons[0].Rule
		}
		if d.Verdict != w.verdict || d.Errno != w.errno || last != w.rule || d.Optimizable != w.opt ||
			(w.optRule != "" && opt0 != w.optRule) || (w.opt && d.OptLen != w.optLen) {
			t.Errorf("+%#x: got %v %v %s opt=%v %v len %d; want %v %v %s opt=%v %s len %d",
				w.off, d.Verdict, d.Errno, last, d.Optimizable, d.OptReasons, d.OptLen,
				w.verdict, w.errno, w.rule, w.opt, w.optRule, w.optLen)
			steps, _, _ := a.ExplainAt(w.off)
			for _, s := range steps {
				t.Logf("    %v", s)
			}
		}
	}
}

// TestAuditFunc6_1: expectations from can_probe (core.c:255), check_ftrace_location
// (kprobes.c:1539), prepare_emulation/prepare_singlestep with Debian's
// PREEMPTION=y, and can_optimize/copy_optimized_instructions (opt.c:207-346).
func TestAuditFunc6_1(t *testing.T) {
	p, _ := Lookup("linux-6.1")
	env := p.DefaultEnv() // Debian: PREEMPTION, KPROBES_ON_FTRACE, OPTPROBES, RETPOLINE
	a, err := p.AuditFunc(Func{Name: "f", Addr: testFuncAddr, Size: uint64(len(testFuncBytes)), Bytes: testFuncBytes}, env)
	if err != nil {
		t.Fatal(err)
	}
	var offs []uint64
	for _, e := range a.Entries {
		offs = append(offs, e.Off)
	}
	if len(offs) != len(testFuncOffsets) {
		t.Fatalf("boundaries %x, want %x", offs, testFuncOffsets)
	}
	for i := range offs {
		if offs[i] != testFuncOffsets[i] {
			t.Fatalf("boundaries %x, want %x", offs, testFuncOffsets)
		}
	}
	if a.FtraceOff != 0 || a.Notrace {
		t.Errorf("ftrace site at %d (notrace %v), want 0", a.FtraceOff, a.Notrace)
	}
	checkAudit(t, a, []auditWant{
		{0x0, Ftrace, 0, "ftrace.prepare", false, "can_optimize.ftrace", 0},
		{0x1, Reject, EILSEQ, "can_probe.boundary", false, "", 0},
		{0x4, Reject, EILSEQ, "can_probe.boundary", false, "", 0},
		// push %rbp: PREEMPTION -> int3 slot; optprobe copies push+mov+mov = 11 bytes.
		{0x5, SingleStep, 0, "prepare_singlestep.int3", true, "can_optimize.ok", 11},
		{0x6, SingleStep, 0, "prepare_singlestep.int3", true, "can_optimize.ok", 10},
		{0x7, Reject, EILSEQ, "can_probe.boundary", false, "", 0},
		{0x9, SingleStep, 0, "prepare_singlestep.int3", true, "can_optimize.ok", 7},
		// test + je: je (74) is not boostable.
		{0x10, SingleStep, 0, "prepare_singlestep.int3", false, "copy_optimized.can_boost", 0},
		// je at 0x12 targets 0x17 = (0x12+1)+4: insn_jump_into_range's end is
		// inclusive (opt.c:260), so can_optimize refuses before the copy.
		{0x12, Emulate, 0, "setup_singlestep.emulate", false, "can_optimize.jump_into", 0},
		// je targets 0x17, inside [0x15, 0x19]: can_optimize refuses first.
		{0x14, SingleStep, 0, "prepare_singlestep.int3", false, "can_optimize.jump_into", 0},
		{0x17, SingleStep, 0, "prepare_singlestep.int3", false, "can_optimize.size", 0},
		{0x18, Emulate, 0, "setup_singlestep.emulate", false, "can_optimize.size", 0},
	})
	if _, err := a.At(0x19); err == nil {
		t.Error("At(size) should fail")
	}

	// Without PREEMPTION: push/mov boost; inc %rax (FF /0) is not boostable in 6.1.
	env2 := p.DefaultEnv()
	env2.Config.Preemption = false
	a2, _ := p.AuditFunc(Func{Name: "f", Addr: testFuncAddr, Bytes: testFuncBytes}, env2)
	checkAudit(t, a2, []auditWant{
		{0x5, Boost, 0, "prepare_singlestep.boost", true, "can_optimize.ok", 11},
		{0x14, SingleStep, 0, "prepare_singlestep.int3", false, "can_optimize.jump_into", 0},
		{0x18, Boost, 0, "prepare_singlestep.boost", false, "can_optimize.size", 0},
	})
	// 6.12 boosts inc %rax (FF /0).
	p612, _ := Lookup("linux-6.12")
	a612, _ := p612.AuditFunc(Func{Name: "f", Addr: testFuncAddr, Bytes: testFuncBytes}, env2)
	checkAudit(t, a612, []auditWant{{0x14, Boost, 0, "prepare_singlestep.boost", false, "can_optimize.jump_into", 0}})

	// A jump-label site over 9..16: a probe at the non-boundary +0xa is refused
	// by check_kprobe_address_safe (EINVAL) before can_probe (EILSEQ); probes
	// whose optprobe region overlaps it get EBUSY.
	env3 := p.DefaultEnv()
	env3.Sites = &StaticSites{JumpLabels: NewSiteTable([]Span{{testFuncAddr + 9, testFuncAddr + 16}})}
	a3, _ := p.AuditFunc(Func{Name: "f", Addr: testFuncAddr, Bytes: testFuncBytes}, env3)
	checkAudit(t, a3, []auditWant{
		{0xa, Reject, EINVAL, "site.jump_label", false, "", 0},
		{0x9, Reject, EINVAL, "site.jump_label", false, "can_optimize.rejected", 0},
		{0x5, SingleStep, 0, "prepare_singlestep.int3", false, "copy_optimized.reserved_jump_label", 0},
	})
}

// TestAuditIBT: with IBT, sym+0 and sym+4 probe the instruction after ENDBR
// (core.c:314), which here is the ftrace site.
func TestAuditIBT(t *testing.T) {
	p, _ := Lookup("linux-6.1")
	env := p.DefaultEnv()
	env.Config.IBT = true
	b := append([]byte{0xf3, 0x0f, 0x1e, 0xfa}, testFuncBytes...)
	a, err := p.AuditFunc(Func{Name: "g", Addr: testFuncAddr, Bytes: b}, env)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Endbr || a.FtraceOff != 4 {
		t.Fatalf("endbr %v ftrace %d", a.Endbr, a.FtraceOff)
	}
	checkAudit(t, a, []auditWant{
		{0x0, Ftrace, 0, "ftrace.prepare", false, "", 0},
		{0x4, Ftrace, 0, "ftrace.prepare", false, "", 0},
		{0x2, Reject, EILSEQ, "can_probe.boundary", false, "", 0},
		{0x6, Reject, EILSEQ, "can_probe.boundary", false, "", 0},
	})
	d, _ := a.At(0)
	if d.Reasons[0].Rule != "ibt.skip_endbr" {
		t.Errorf("sym+0 reasons %v", d.Reasons)
	}
	steps, d, _ := a.ExplainAt(0)
	if d.Verdict != Ftrace || steps[0].Rule != "ibt.skip_endbr" || d.Addr != testFuncAddr+4 {
		t.Errorf("ExplainAt(0): %v at %#x, first step %v", d.String(), d.Addr, steps[0])
	}
}

// TestAuditNotrace: a function without fentry site, with InferNotrace, is refused
// by kprobe_events (trace_kprobe.c:489) at every offset, but not by
// register_kprobe().
func TestAuditNotrace(t *testing.T) {
	p, _ := Lookup("linux-6.1")
	env := p.DefaultEnv()
	env.InferNotrace = true
	b := testFuncBytes[5:]
	a, _ := p.AuditFunc(Func{Name: "h", Addr: testFuncAddr, Bytes: b}, env)
	if !a.Notrace || !a.NotraceKnown {
		t.Fatal("notrace not inferred")
	}
	checkAudit(t, a, []auditWant{{0x0, Reject, EINVAL, "trace_kprobe.notrace", false, "", 0}})
	env.Config.DirectRegister = true
	a, _ = p.AuditFunc(Func{Name: "h", Addr: testFuncAddr, Bytes: b}, env)
	checkAudit(t, a, []auditWant{{0x0, SingleStep, 0, "prepare_singlestep.int3", true, "can_optimize.ok", 11}})
}

// TestAuditIndirect: an indirect jmp anywhere in the function blocks optprobes in
// 6.1 (opt.c:338); 6.12 skips the test with RETPOLINE. A retpoline thunk jump
// counts in 6.1 (opt.c:267-279).
func TestAuditIndirect(t *testing.T) {
	body := append(append([]byte{}, testFuncBytes[5:]...), 0xff, 0xe0) // ... ret; jmp *%rax
	p, _ := Lookup("linux-6.1")
	env := p.DefaultEnv()
	a, _ := p.AuditFunc(Func{Name: "i", Addr: testFuncAddr, Bytes: body}, env)
	checkAudit(t, a, []auditWant{{0x0, SingleStep, 0, "prepare_singlestep.int3", false, "can_optimize.indirect_jump", 0}})
	p612, _ := Lookup("linux-6.12")
	a612, _ := p612.AuditFunc(Func{Name: "i", Addr: testFuncAddr, Bytes: body}, env)
	checkAudit(t, a612, []auditWant{{0x0, SingleStep, 0, "prepare_singlestep.int3", true, "can_optimize.ok", 11}})

	// jmp rel32 to a thunk at 0xffffffff82000000.
	thunk := uint64(0xffffffff82000000)
	jb := append([]byte{}, testFuncBytes[5:]...)
	from := testFuncAddr + uint64(len(jb)) + 5
	rel := uint32(int32(int64(thunk - from)))
	jb = append(jb, 0xe9, byte(rel), byte(rel>>8), byte(rel>>16), byte(rel>>24))
	env.ThunkStart, env.ThunkEnd = thunk, thunk+0x100
	a, _ = p.AuditFunc(Func{Name: "j", Addr: testFuncAddr, Bytes: jb}, env)
	checkAudit(t, a, []auditWant{{0x0, SingleStep, 0, "prepare_singlestep.int3", false, "can_optimize.thunk_jump", 0}})
}

// TestAuditNoBoundaryCheck: uprobes and 2.6.17 decode whatever starts at an offset.
func TestAuditNoBoundaryCheck(t *testing.T) {
	up, _ := Lookup("uprobes-x86")
	a, err := up.AuditFunc(Func{Name: "f", Addr: 0x401000, Bytes: testFuncBytes}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// +0xb is "05 10 00 00 00" (add $0x10,%eax): accepted and single-stepped.
	d, _ := a.At(0xb)
	if d.Verdict != SingleStep || d.Len != 5 {
		t.Errorf("uprobe at +0xb: %v len %d", d.String(), d.Len)
	}
	old, _ := Lookup("linux-2.6.17-i386")
	if _, err := old.AuditFunc(Func{Name: "f", Addr: 0xc0100000, Bytes: testFuncBytes}, &Env{Mode: decode.Mode64}); err == nil {
		t.Error("2.6.17 policy accepted 64-bit code")
	}
	a, _ = old.AuditFunc(Func{Name: "f", Addr: 0xc0100000, Bytes: testFuncBytes}, nil)
	if d, _ := a.At(2); d.Verdict == Reject {
		t.Errorf("2.6.17 at +2: %v", d.String())
	}
}

// TestBooster2006Sequence replays the 2006 state machine (resume_execution):
// prepare -> 0, first hit single-steps, AfterStep writes the jmp at IP and sets
// 1, later hits are boosted unless a post_handler is set.
func TestBooster2006Sequence(t *testing.T) {
	code := []byte{0x89, 0xe5, 0x90, 0x90} // mov %esp,%ebp
	var addr, slot uint64 = 0xc0100000, 0xc8800000
	b := NewBooster2006(code, addr, slot)
	if b.State != BoostCandidate {
		t.Fatalf("initial state %v", b.State)
	}
	cfg := Config{}
	if b.Hit(cfg) != HitSingleStep {
		t.Fatal("first hit must single-step")
	}
	if ip := b.AfterStep(2); ip != addr+2 {
		t.Errorf("resumed at %#x", ip)
	}
	if b.State != BoostOn || b.JmpAt != 2 {
		t.Fatalf("after first step: %v jmp at %d", b.State, b.JmpAt)
	}
	// jmp rel32 at slot+2 to addr+2: rel = (addr+2) - (slot+2+5).
	rel := uint32(int32(int64((addr + 2) - (slot + 2 + 5))))
	want := []byte{0x89, 0xe5, 0xe9, byte(rel), byte(rel >> 8), byte(rel >> 16), byte(rel >> 24)}
	for i, w := range want {
		if b.Slot[i] != w {
			t.Fatalf("slot % x, want % x", b.Slot[:7], want)
		}
	}
	if b.Hit(cfg) != HitBoosted {
		t.Error("second hit must be boosted")
	}
	if b.Hit(Config{PostHandler: true}) != HitSingleStep || b.Hit(Config{Preemption: true}) != HitSingleStep {
		t.Error("post_handler / CONFIG_PREEMPT must single-step")
	}

	// IP left at slot+11 by the step: 11 + 5 >= 16 -> never.
	b = NewBooster2006(code, addr, slot)
	b.AfterStep(11)
	if b.State != BoostNever || b.JmpAt != -1 {
		t.Errorf("ip 11: %v", b.State)
	}
	// A backward jump leaves IP below the slot (regs->eip > copy_eip fails).
	b = NewBooster2006(code, addr, slot)
	b.AfterStep(^uint64(0) - 9)
	if b.State != BoostNever {
		t.Errorf("backward: %v", b.State)
	}
	// jcc: can_boost says -1 at prepare; stays -1.
	b = NewBooster2006([]byte{0x74, 0x02}, addr, slot)
	b.AfterStep(2)
	if b.State != BoostNever || b.Hit(cfg) != HitSingleStep {
		t.Errorf("jcc: %v", b.State)
	}
	// ret: boosted without a jmp.
	b = NewBooster2006([]byte{0xc3}, addr, slot)
	if ip := b.AfterStep(0x1234); ip != 0 || b.State != BoostOn || b.JmpAt != -1 {
		t.Errorf("ret: ip %#x state %v jmp %d", ip, b.State, b.JmpAt)
	}
}

// TestAuditI386Fentry: the 32-bit x86_nops[5] (3E 8D 74 26 00) marks the
// ftrace site of an i386 function.
func TestAuditI386Fentry(t *testing.T) {
	p, _ := Lookup("linux-6.1")
	env := p.DefaultEnv()
	env.Mode = decode.Mode32
	a, err := p.AuditFunc(Func{Name: "f32", Addr: 0xc1000000, Bytes: []byte{0x3e, 0x8d, 0x74, 0x26, 0x00, 0x55, 0x89, 0xe5, 0x5d, 0xc3}}, env)
	if err != nil {
		t.Fatal(err)
	}
	checkAudit(t, a, []auditWant{
		{0x0, Ftrace, 0, "ftrace.prepare", false, "", 0},
		{0x2, Reject, EILSEQ, "can_probe.boundary", false, "", 0},
		// push+mov+pop+ret = 5 bytes, all boostable, size - off = 5.
		{0x5, SingleStep, 0, "prepare_singlestep.int3", true, "can_optimize.ok", 5},
	})
}

// TestAuditEndbrPoison: a sealed function starts with apply_seal_endbr's
// poison, which is_endbr takes like ENDBR: 66 0f 1f 00 up to 6.x, 0f 1f 40 d6
// in 7.2 (arch/x86/include/asm/ibt.h of each source), so sym+0 probes sym+4
// only where the poison is that version's.
func TestAuditEndbrPoison(t *testing.T) {
	for _, c := range []struct {
		policy string
		poison []byte
		endbr  bool
	}{
		{"linux-6.12", []byte{0x66, 0x0f, 0x1f, 0x00}, true},
		{"linux-6.12", []byte{0x0f, 0x1f, 0x40, 0xd6}, false},
		{"linux-7.2", []byte{0x0f, 0x1f, 0x40, 0xd6}, true},
		{"linux-7.2", []byte{0x66, 0x0f, 0x1f, 0x00}, false},
	} {
		p, _ := Lookup(c.policy)
		env := p.DefaultEnv()
		env.Config.IBT = true
		b := append(append([]byte{}, c.poison...), testFuncBytes...)
		a, err := p.AuditFunc(Func{Name: "g", Addr: testFuncAddr, Bytes: b}, env)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := a.At(0)
		if a.Endbr != c.endbr || (d.Addr == testFuncAddr+4) != c.endbr {
			t.Errorf("%s, % x: endbr %v, sym+0 probes %#x; want endbr %v", c.policy, c.poison, a.Endbr, d.Addr, c.endbr)
		}
	}
}
