package boost

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/kboost/kboost/decode"
)

// 32-bit ARM policies: linux-6.1-arm (an ARM-mode kernel, A32 probes,
// !CONFIG_THUMB2_KERNEL, with optprobes) and linux-6.1-thumb (a
// CONFIG_THUMB2_KERNEL kernel, T16/T32 probes, no optprobes), from
// arch/arm/probes/ of Linux 6.1. Every decision is a function of the raw
// instruction through the kernel's own tables (a32_tables.go) and walk
// (a32_decode.go).

var linux61ARM = &Policy{
	Name:          "linux-6.1-arm",
	Title:         "Linux 6.1 kprobes on 32-bit ARM, ARM-mode kernel (decode tables: reject / simulate / emulate in a slot ending in mov pc, lr; ARM optprobes)",
	Source:        "Debian linux-source-6.1: arch/arm/probes/{decode.c,decode-arm.c}, arch/arm/probes/kprobes/{core.c,actions-arm.c,actions-common.c,checkers-arm.c,checkers-common.c,opt-arm.c}, kernel/kprobes.c",
	Modes:         []decode.Mode{decode.ModeA32},
	Defaults:      Config{DynamicFtrace: true, SMP: true},
	MaxInsnSize:   8, // MAX_INSN_SIZE = 2 words
	CheckBoundary: true,
	FtraceEntry:   true,
	Optprobes:     true,
	classify:      func(c *cls) { classifyA32(c, false) },
	canBoost:      neverBoosts,
	indirectRule:  noIndirectRule,
	audit:         auditA32,
	explainAt:     explainAtA32,
}

var linux61Thumb = &Policy{
	Name:        "linux-6.1-thumb",
	Title:       "Linux 6.1 kprobes on a Thumb-2 kernel (CONFIG_THUMB2_KERNEL: T16/T32 decode tables, slots ending in bx lr, no optprobes)",
	Source:      "Debian linux-source-6.1: arch/arm/probes/{decode.c,decode-thumb.c}, arch/arm/probes/kprobes/{core.c,actions-thumb.c,actions-common.c,checkers-thumb.c,checkers-common.c}, kernel/kprobes.c",
	Modes:       []decode.Mode{decode.ModeT32},
	Defaults:    Config{DynamicFtrace: true, SMP: true},
	MaxInsnSize: 8,
	// No can_probe on ARM: a probe in the middle of a 32-bit instruction
	// decodes its second halfword.
	CheckBoundary: false,
	FtraceEntry:   true,
	classify:      func(c *cls) { classifyA32(c, true) },
	canBoost:      neverBoosts,
	indirectRule:  noIndirectRule,
	audit:         auditA32,
	explainAt:     explainAtA32,
}

const (
	a32Pol   = "linux-6.1-arm"
	t32Pol   = "linux-6.1-thumb"
	a32Both  = a32Pol + "," + t32Pol
	a32Dir   = "arch/arm/probes/"
	a32CoreC = a32Dir + "kprobes/core.c"
	a32OptC  = a32Dir + "kprobes/opt-arm.c"
)

var (
	rA32Align     = newRule("arm.align", a32Pol, a32CoreC+" arch_prepare_kprobe()", "the address is not 4-byte aligned: EINVAL")
	rA32Read      = newRule("arm.read", a32Pol, a32CoreC+" arch_prepare_kprobe()", "no whole instruction word at the address")
	rA32Cond      = newRule("arm.condition", a32Pol, a32CoreC+" arch_arm_kprobe(); "+a32Dir+"decode-arm.c arm_probes_decode_insn()", "a conditional instruction: the breakpoint (0x07f001f8) takes its condition, the table walk sees it made unconditional, and the handler tests the condition (probes_condition_checks)")
	rA32Regs      = newRule("arm.regs", a32Pol, a32Dir+"decode.c decode_regs()", "a register field breaks the entry's REGS() constraint (PC, SP, or PC with writeback): INSN_REJECTED, EINVAL")
	rA32Stack     = newRule("arm.stack_space", a32Pol, a32CoreC+" arch_prepare_kprobe(); "+a32Dir+"kprobes/checkers-arm.c arm_check_stack()", "the instruction stores below SP by an unknown amount or by more than MAX_STACK_SIZE (64) bytes: EINVAL")
	rA32OptDirect = newRule("arm.opt.direct_exec", a32Pol, a32OptC+" arch_prepare_optimized_kprobe() can_kprobe_direct_exec()", "optimizable: B (same condition) to a detour within +-32 MiB; the instruction does not use PC, so the detour restores r0-r14, runs it verbatim and branches back to addr+4")
	rA32OptEmul   = newRule("arm.opt.emulated", a32Pol, a32OptC+" optimized_callback()", "optimizable: B (same condition) to a detour within +-32 MiB; the instruction may use PC (or has no register checker), so the callback simulates/emulates it")
	rA32OptStack  = newRule("arm.opt.stack", a32Pol, a32OptC+" can_optimize()", "stack_space above 255 - sizeof(struct pt_regs): not optimized")
	rA32OptPost   = newRule("arm.opt.post_handler", a32Pol, kprobeC+" optimize_kprobe()", "the probe has a post_handler: never optimized")
	rA32OptRange  = newRule("arm.opt.range", a32Pol, a32OptC+" arch_prepare_optimized_kprobe()", "the detour buffer is beyond B's +-32 MiB: ERANGE, the probe stays a breakpoint")
	rT32Read      = newRule("thumb.read", t32Pol, a32CoreC+" arch_prepare_kprobe()", "no whole instruction at the address (a 32-bit Thumb instruction needs two halfwords)")
	rT32Regs      = newRule("thumb.regs", t32Pol, a32Dir+"decode.c decode_regs()", "a register field breaks the entry's REGS() constraint (PC, SP, or PC with writeback): INSN_REJECTED, EINVAL")
	rT32Stack     = newRule("thumb.stack_space", t32Pol, a32CoreC+" arch_prepare_kprobe(); "+a32Dir+"kprobes/checkers-thumb.c t32_check_stack()", "the instruction stores below SP by an unknown amount or by more than MAX_STACK_SIZE (64) bytes: EINVAL")
	rT32IT        = newRule("thumb.it_block", t32Pol, a32Dir+"decode-thumb.c thumb_check_cc(); "+a32CoreC+" arch_prepare_kprobe()", "probes inside an IT block are accepted: arch_prepare_kprobe has no IT test; at run time thumb_check_cc() applies the ITSTATE condition and the single-step advances ITSTATE")
)

// a32RejectDesc documents the reject labels of a32_tables.go.
var a32RejectDesc = map[string]string{
	"arm.unprivileged_extra":        "LDRHT/STRHT/LDRSBT/LDRSHT (unprivileged extra load/store)",
	"arm.ldrd_strd_lr":              "LDRD/STRD with Rt = LR (Rt2 would be PC)",
	"arm.dp_flags_pc":               "flag-setting data processing with Rd = PC (exception return forms)",
	"arm.hint_msr_imm":              "MSR (immediate) and hints other than NOP/YIELD/WFE/WFI/SEV (DBG, unallocated)",
	"arm.media_unallocated":         "unallocated media encodings",
	"arm.udf":                       "UDF (permanently undefined)",
	"arm.ldrb_strb_pc":              "LDRB/STRB with Rt = PC",
	"arm.unprivileged":              "LDRT/STRT/LDRBT/STRBT (unprivileged)",
	"arm.coprocessor_svc":           "coprocessor (VFP, NEON, MCR/MRC, LDC/STC) and SVC",
	"arm.unconditional":             "unconditional space other than PLD/PLI/BLX: CPS, SETEND, SRS, RFE, *2 coprocessor, NEON, barriers, CLREX, unallocated",
	"arm.misc":                      "BXJ, MSR (register), MRS SPSR, BKPT, SMC, HVC, ERET and unallocated miscellaneous encodings",
	"arm.unallocated":               "no entry of the table matches (unallocated for the kernel)",
	"arm.swp_exclusive":             "SWP/SWPB and the load/store exclusives (LDREX/STREX family)",
	"arm.ldm_stm_user":              "LDM/STM with the S bit (user registers, exception return)",
	"thumb.ldm_stm_pc_base":         "LDM/STM with Rn = PC",
	"thumb.srs_rfe":                 "SRS/RFE",
	"thumb.stm_pc":                  "STM with PC in the list",
	"thumb.ldm_lr_pc":               "LDM with both LR and PC in the list",
	"thumb.ldm_stm_sp":              "LDM/STM with SP in the list",
	"thumb.ldm_stm":                 "load/store multiple the custom decoder does not take",
	"thumb.exclusive":               "load/store exclusive (LDREX/STREX family) and unallocated dual/exclusive encodings",
	"thumb.dp_unallocated":          "unallocated data-processing encodings",
	"thumb.addsub_sp_shift":         "ADD/SUB SP, SP, Rm with a shift other than LSL #0..3",
	"thumb.coprocessor":             "coprocessor, VFP and NEON",
	"thumb.neon_load_store":         "NEON element/structure load/store",
	"thumb.system":                  "MSR, CPS, DBG, unallocated hints, CLREX/DSB/DMB/ISB, BXJ, SUBS PC, LR, MRS SPSR, SMC, UDF",
	"thumb.branch_misc_unallocated": "unallocated branch and miscellaneous control encodings",
	"thumb.hint_unallocated":        "unallocated hints",
	"thumb.ldst_unallocated":        "unallocated load/store single encodings",
	"thumb.unprivileged":            "LDRT/STRT family (unprivileged)",
	"thumb.str_pc_base":             "STR{,B,H} with Rn = PC",
	"thumb.str_pc":                  "STR{,B,H} with Rt = PC",
	"thumb.dp_reg_unallocated":      "unallocated data-processing (register) encodings",
	"thumb.mul_unallocated":         "unallocated multiply encodings",
	"thumb.divide_unallocated":      "SDIV/UDIV and unallocated long-multiply encodings",
	"thumb.t16_unallocated":         "unallocated 16-bit encodings",
	"thumb.misc16":                  "SETEND, CPS, BKPT and unallocated miscellaneous 16-bit encodings",
	"thumb.blx_pc":                  "BLX PC",
	"thumb.add_pc_pc":               "ADD PC, PC",
	"thumb.udf_svc":                 "UDF and SVC",
}

// Rules for reject labels and actions, built at init from the tables.
var (
	a32RejectRules = map[string]*rule{}
	a32ActRules    = map[string]*rule{} // "arm.emulate.load"...
)

func a32Prefix(thumb bool) (string, string) {
	if thumb {
		return "thumb", t32Pol
	}
	return "arm", a32Pol
}

func a32RejectRule(thumb bool, label string) *rule {
	pre, pol := a32Prefix(thumb)
	id := pre + ".reject." + label
	if r, ok := a32RejectRules[id]; ok {
		return r
	}
	desc := a32RejectDesc[pre+"."+label]
	if desc == "" {
		desc = label
	}
	file := "decode-arm.c"
	if thumb {
		file = "decode-thumb.c"
	}
	r := newRule(id, pol, a32Dir+file+" probes_decode_insn()", desc+": INSN_REJECTED, EINVAL")
	a32RejectRules[id] = r
	return r
}

func a32ActRule(thumb bool, verdict string, act a32Act) *rule {
	pre, pol := a32Prefix(thumb)
	ai := &a32Acts[act]
	id := pre + "." + verdict + "." + ai.id
	if r, ok := a32ActRules[id]; ok {
		return r
	}
	file := "actions-arm.c"
	if thumb {
		file = "actions-thumb.c"
	}
	desc := ai.id + ": simulated in the breakpoint handler, no slot (INSN_GOOD_NO_SLOT)"
	if verdict == "emulate" {
		desc = ai.id + ": emulated, the (register-renamed) instruction runs in a slot as a subroutine ending in mov pc, lr / bx lr (INSN_GOOD)"
	}
	r := newRule(id, pol, a32Dir+"kprobes/"+file, desc)
	a32ActRules[id] = r
	return r
}

func init() {
	// Every rule a table can name exists before Rules() is asked.
	var visit func(t *a32Table, thumb bool, seen map[*a32Table]bool)
	visit = func(t *a32Table, thumb bool, seen map[*a32Table]bool) {
		if seen[t] {
			return
		}
		seen[t] = true
		a32RejectRule(thumb, t.end)
		for i := range t.e {
			e := &t.e[i]
			switch e.kind {
			case dTable:
				visit(e.sub, thumb, seen)
			case dReject:
				a32RejectRule(thumb, e.label)
			case dSimulate:
				a32ActRule(thumb, "simulate", e.act)
			case dEmulate:
				a32ActRule(thumb, "emulate", e.act)
			case dCustom:
				switch a32Acts[e.act].custom {
				case cLdmstm, cT32Ldmstm:
					a32ActRule(thumb, "simulate", e.act)
					a32ActRule(thumb, "emulate", e.act)
				case cCondBranch16, cCondBranch32, cIT:
					a32ActRule(thumb, "simulate", e.act)
				default:
					a32ActRule(thumb, "emulate", e.act)
				}
			}
		}
	}
	visit(a32TopARM, false, map[*a32Table]bool{})
	seen := map[*a32Table]bool{}
	visit(a32TopT32, true, seen)
	visit(a32TopT16, true, seen)
}

func init() {
	readers[decode.ModeA32] = (*probe).readA32
	readers[decode.ModeT32] = (*probe).readA32
}

// readA32 fills the probe's instruction from the bytes at addr as the kernel
// reads it: an A32 word (4 bytes) or a Thumb halfword plus, when it starts a
// 32-bit instruction, the next (Thumb value order: first halfword in bits
// 31..16). Thumb addresses drop bit 0 (the Thumb bit).
func (pr *probe) readA32(dst *decode.Inst, b []byte, addr uint64, mode decode.Mode) {
	arch := decode.ARM
	if mode == decode.ModeT32 {
		arch = decode.Thumb
	}
	pr.decErr = arch.Decode(dst, b, addr)
	if mode == decode.ModeA32 {
		if len(b) >= 4 {
			pr.a64, pr.word = true, binary.LittleEndian.Uint32(b)
		}
		return
	}
	if len(b) < 2 {
		return
	}
	h := uint32(binary.LittleEndian.Uint16(b))
	if h < 0xe800 {
		pr.a64, pr.word = true, h
		return
	}
	if len(b) >= 4 {
		pr.a64, pr.word = true, h<<16|uint32(binary.LittleEndian.Uint16(b[2:]))
	}
}

// a32Address is register_kprobe's generic part for the ARM policies (no
// KPROBES_ON_FTRACE on arm: an ftrace location is refused).
var a32Address = addressRules{
	notraceUnknown: "no ftrace table: assumed traceable",
	ftraceReject:   "ftrace location (the bl __gnu_mcount_nc call): arm has no KPROBES_ON_FTRACE: EINVAL",
	ftracePass:     "not an ftrace location",
}

// addressRules are the per-architecture details of register_kprobe's
// generic checks on the ARM architectures, which have no KPROBES_ON_FTRACE.
type addressRules struct {
	notraceUnknown string // detail when no ftrace table says whether the function is notrace
	ftraceReject   string // detail of the refusal at an ftrace location
	ftracePass     string // detail when the address is no ftrace location
	cfiPrefix      bool   // the CFI type-hash prefix before a function is refused (not text)
}

// addressSafe runs register_kprobe's generic checks before
// arch_prepare_kprobe (trace_kprobe's notrace check, check_ftrace_location,
// check_kprobe_address_safe) for an ARM policy; false when one rejected the
// probe.
func addressSafe(c *cls, r *addressRules) bool {
	pr, env := c.pr, c.env
	cfg := env.Config
	a := pr.addr
	if cfg.DynamicFtrace && !cfg.KprobeEventsOnNotrace && !cfg.DirectRegister {
		switch pr.notrace {
		case 1:
			c.reject(rNotrace, EINVAL, "")
			return false
		case -1:
			c.step(rNotrace, Unknown, r.notraceUnknown)
		default:
			c.step(rNotrace, Pass, "the function has an ftrace location")
		}
	}
	switch pr.ftrace {
	case 1:
		c.reject(rFtraceNoKOF, EINVAL, r.ftraceReject)
		return false
	case 0:
		c.step(rFtraceLoc, Pass, r.ftracePass)
	default:
		c.step(rFtraceLoc, Unknown, "no ftrace table: assumed not an ftrace location")
	}
	if sites := env.Sites; sites == nil {
		c.step(rBlAny, Unknown, "no site tables: text, blacklist, jump-label, static-call and BUG sites assumed absent")
	} else if !sitesAllow(c, sites, a) {
		return false
	}
	if r.cfiPrefix && pr.inFunc && hasCFIPrefix(pr.fnName) {
		c.reject(rCFI, EINVAL, "")
		return false
	}
	return true
}

// sitesAllow runs check_kprobe_address_safe's table lookups: kernel text,
// init text, the blacklist, jump-label, static-call and BUG sites.
func sitesAllow(c *cls, sites Sites, a uint64) bool {
	if hit, known := sites.Text(a); known && !hit {
		if ih, ik := sites.InitText(a); ik && ih {
			c.reject(rInitText, EINVAL, "")
		} else {
			c.reject(rNotText, EINVAL, "")
		}
		return false
	}
	if hit, known := sites.InitText(a); known && hit {
		c.reject(rInitText, EINVAL, "")
		return false
	}
	kind, hit, known := sites.Blacklisted(a)
	switch {
	case hit:
		c.reject(blacklistRule(kind), EINVAL, "")
		return false
	case known:
		c.step(rBlAny, Pass, "not blacklisted")
	default:
		c.step(rBlAny, Unknown, "no blacklist table: assumed not blacklisted")
	}
	return !(rejectSite(c, sites.JumpLabel, Span{a, a + 1}, rJumpLbl) ||
		rejectSite(c, sites.StaticCall, Span{a, a + 1}, rStatCall) ||
		rejectSite(c, func(s Span) (bool, bool) { return sites.Bug(s.Start) }, Span{a, a + 1}, rBug))
}

// classifyA32 follows register_kprobe() -> arch_prepare_kprobe() on 32-bit
// ARM 6.1 and, for the ARM-mode kernel, optprobe eligibility.
func classifyA32(c *cls, thumb bool) {
	pr, env, d := c.pr, c.env, c.d
	if !addressSafe(c, &a32Address) {
		return
	}
	if thumb {
		pr.addr &^= 1
		d.Addr = pr.addr
		if !pr.a64 {
			c.reject(rT32Read, EINVAL, c.detailf("no instruction: %v", pr.decErr))
			return
		}
	} else {
		if pr.addr&3 != 0 {
			c.reject(rA32Align, EINVAL, "")
			return
		}
		c.step(rA32Align, Pass, "4-byte aligned")
		if !pr.a64 {
			c.reject(rA32Read, EINVAL, c.detailf("no instruction word: %v", pr.decErr))
			return
		}
	}
	w := pr.word
	d.Len = 4
	if thumb && !a32Thumb32(w) {
		d.Len = 2
	}
	if !thumb && w < 0xe0000000 {
		c.step(rA32Cond, Note, c.detailf("%08x: condition %s; the breakpoint becomes %08x and the walk sees %08x", w,
			decode.Cond(w>>28), 0x07f001f8|w&0xf0000000, (w|0xe0000000)&^0x10000000))
	}
	if thumb && pr.itCond >= 2 {
		c.step(rT32IT, Note, c.detailf("inside an IT block (condition %s): %s", decode.Cond(pr.itCond-2), rT32IT.Desc))
	}
	r := a32Prepare(w, thumb)
	switch r.walk.why {
	case wReject:
		c.reject(a32RejectRule(thumb, r.walk.entry.label), EINVAL, c.detailf("%s: matches %s[] entry %08x/%08x: %s: INSN_REJECTED, EINVAL",
			a32Hex(w, thumb), r.walk.table.name, r.walk.entry.mask, r.walk.entry.value, a32RejectDesc[a32Pre(thumb)+"."+r.walk.entry.label]))
		return
	case wEnd:
		c.reject(a32RejectRule(thumb, r.walk.table.end), EINVAL, c.detailf("%s: no entry of %s[] matches (%s): INSN_REJECTED, EINVAL",
			a32Hex(w, thumb), r.walk.table.name, a32RejectDesc[a32Pre(thumb)+"."+r.walk.table.end]))
		return
	case wRegs:
		rg := rA32Regs
		if thumb {
			rg = rT32Regs
		}
		c.reject(rg, EINVAL, c.detailf("%s: entry %08x/%08x of %s[]: the register at bits %d..%d (r%d) must be %s: INSN_REJECTED, EINVAL",
			a32Hex(w, thumb), r.walk.entry.mask, r.walk.entry.value, r.walk.table.name, r.walk.regNib+3, r.walk.regNib,
			(r.walk.insn>>r.walk.regNib)&0xf, a32RegTypeNames[r.walk.regTyp]))
		return
	}
	if r.stack < 0 || r.stack > a32MaxStack {
		rs := rA32Stack
		if thumb {
			rs = rT32Stack
		}
		t := c.detailf("%s: stack_space %d (unknown, SP-relative register offset)", a32Hex(w, thumb), r.stack)
		if r.stack > 0 {
			t = c.detailf("%s: stores %d bytes below SP, more than MAX_STACK_SIZE (64): EINVAL", a32Hex(w, thumb), r.stack)
		}
		c.reject(rs, EINVAL, t)
		return
	}
	e := r.walk.entry
	if r.good {
		d.Verdict = SingleStep
		for i := 0; i < r.slotLen/2; i++ {
			binary.LittleEndian.PutUint16(d.Slot[2*i:], r.slot[i])
		}
		d.SlotLen = r.slotLen
		c.step(a32ActRule(thumb, "emulate", e.act), Decides, c.detailf("%s: %s, handler %s; slot % x", a32Hex(w, thumb),
			a32Acts[e.act].id, r.handler, d.Slot[:d.SlotLen]))
	} else {
		d.Verdict, d.Emulated = Emulate, true
		h := r.handler
		if r.itStep {
			h = "none (t16_singlestep_it advances ITSTATE)"
		}
		c.step(a32ActRule(thumb, "simulate", e.act), Decides, c.detailf("%s: %s, handler %s (no slot)", a32Hex(w, thumb), a32Acts[e.act].id, h))
	}
	if thumb {
		return
	}
	// Optprobes (opt-arm.c): the probe is optimized unless one of these holds.
	opt := func(r *rule, t string) {
		d.OptReasons = append(d.OptReasons, Reason{Rule: r.ID, Text: r.Desc})
		c.step(r, Note, t)
	}
	switch {
	case r.stack > 255-a32PtRegs:
		opt(rA32OptStack, "")
		return
	case env.Config.PostHandler:
		opt(rA32OptPost, "")
		return
	case env.SlotAddr != 0:
		// SlotAddr is the detour buffer (get_optinsn_slot) here.
		rel := uint32(env.SlotAddr-pr.addr+8) & 0xfe000003
		if rel != 0 && rel != 0xfe000000 {
			opt(rA32OptRange, c.detailf("detour %#x is %#x bytes from the probe: beyond +-32 MiB (ERANGE)", env.SlotAddr, int64(env.SlotAddr-pr.addr)))
			return
		}
	}
	d.Optimizable, d.OptLen = true, 4
	if r.used&(1<<15) == 0 {
		opt(rA32OptDirect, c.detailf("[OPTIMIZED]: register_usage_flags %#x has no PC: detour = restore r0-r14, %08x, B %#x", r.used, w, pr.addr+4))
	} else {
		opt(rA32OptEmul, c.detailf("[OPTIMIZED]: register_usage_flags %#x includes PC (or is unknown): the callback runs the kernel's %s path", r.used, a32Acts[e.act].id))
	}
}

func a32Pre(thumb bool) string {
	p, _ := a32Prefix(thumb)
	return p
}

func a32Hex(w uint32, thumb bool) string {
	switch {
	case !thumb:
		return fmt.Sprintf("%08x", w)
	case a32Thumb32(w):
		return fmt.Sprintf("%04x %04x", w>>16, w&0xffff)
	}
	return fmt.Sprintf("%04x", w)
}

// auditA32 is Auditor.Audit for the 32-bit ARM policies: A32 code is a
// word every 4 bytes; Thumb code is swept halfword by halfword (a first
// halfword of 0xe800 or above starts a 32-bit instruction). The ftrace
// location (the mcount call) is known only from the site tables.
func auditA32(au *Auditor, fn Func) (*FuncAudit, error) {
	p, env, mode := au.p, au.env, au.mode
	size := fn.Size
	if size == 0 {
		size = uint64(len(fn.Bytes))
	}
	if uint64(len(fn.Bytes)) < size {
		return nil, fmt.Errorf("function %s: %d bytes given for size %d: pass the symbol's bytes", fn.Name, len(fn.Bytes), size)
	}
	fn.Size = size
	a := &au.fa
	*a = FuncAudit{Func: fn, Policy: p, Mode: mode, FtraceOff: -1, DecodeFailOff: -1, env: env,
		Entries: a.Entries[:0], walk: a.walk[:0], OptReasons: a.OptReasons[:0]}
	arch := decode.ARM
	if mode == decode.ModeT32 {
		arch = decode.Thumb
	}
	for off := uint64(0); off < size; {
		a.Entries = append(a.Entries, Entry{Off: off})
		e := &a.Entries[len(a.Entries)-1]
		_ = arch.Decode(&e.Inst, fn.Bytes[off:size], fn.Addr+off)
		n := a32LenAt(fn.Bytes[off:size], mode)
		e.Len, e.DecodeOK = n, off+uint64(n) <= size
		if !e.DecodeOK && a.DecodeFailOff < 0 {
			a.DecodeFailOff = int64(off)
		}
		a.walk = append(a.walk, off)
		off += uint64(n)
	}
	if a.ftraceTableKnown(env) {
		a.NotraceKnown = true
		for _, off := range a.walk {
			if h, _ := env.Sites.Ftrace(Span{fn.Addr + off, fn.Addr + off + 1}); h {
				a.FtraceOff, a.FtraceFrom = int64(off), "table"
				break
			}
		}
		a.Notrace = a.FtraceOff < 0
		a.baseTraced(env)
	}
	if !p.Optprobes {
		a.OptReasons = append(a.OptReasons, Reason{Rule: rOptUnsup.ID, Text: rOptUnsup.Desc})
	}
	n := len(a.Entries)
	au.reserveReasons(n)
	var its []uint8
	if mode == decode.ModeT32 {
		its = a32ITConds(a)
	}
	s := &au.s
	for i := range a.Entries {
		e := &a.Entries[i]
		r, o := reasonsPerEntry*i, optReasonsPerEntry*i
		e.Decision.Reasons = au.arena[r : r : r+reasonsPerEntry]
		e.Decision.OptReasons = au.optArena[o : o : o+optReasonsPerEntry]
		a.probeA32(&s.pr, e.Off, env)
		s.pr.boundary = 1
		if its != nil {
			s.pr.itCond = its[i]
		}
		p.decide(s, &e.Decision, env, false, mode)
	}
	return a, nil
}

// a32ITConds is, per boundary of a Thumb audit, the probe's IT context (see
// probe.itCond), from a sweep that follows ITSTATE through IT instructions.
func a32ITConds(a *FuncAudit) []uint8 {
	out := make([]uint8, len(a.walk))
	var its uint32 // firstcond:mask
	for i, off := range a.walk {
		out[i] = 1
		if its&0xf != 0 {
			out[i] = 2 + uint8(its>>4)
			if its&7 == 0 {
				its = 0
			} else {
				its = its&0xe0 | (its<<1)&0x1f
			}
		}
		if h := a32ThumbHalf(a.Func.Bytes[off:a.Func.Size]); h&0xff00 == 0xbf00 && h&0xf != 0 {
			its = h & 0xff
		}
	}
	return out
}

// a32ThumbHalf is the first halfword of b (0 when short).
func a32ThumbHalf(b []byte) uint32 {
	if len(b) < 2 {
		return 0
	}
	return uint32(binary.LittleEndian.Uint16(b))
}

// a32LenAt is the instruction length the kernel reads at b (at least 2).
func a32LenAt(b []byte, mode decode.Mode) int {
	if mode == decode.ModeT32 && len(b) >= 2 && binary.LittleEndian.Uint16(b) < 0xe800 {
		return 2
	}
	if mode == decode.ModeT32 && len(b) < 2 {
		return 2
	}
	return 4
}

// probeA32 fills pr for a probe at off with what the kernel reads there (the
// kernel has no boundary check on ARM: any offset is read as an instruction).
func (a *FuncAudit) probeA32(pr *probe, off uint64, env *Env) {
	*pr = a.probeAt(off, env)
	end := min(off+4, a.Func.Size)
	var in decode.Inst
	pr.readA32(&in, a.Func.Bytes[off:end], a.Func.Addr+off, a.Mode)
}

// explainAtA32 is FuncAudit.ExplainAt for the 32-bit ARM policies: any offset
// in the function (the kernel reads whatever is there).
func explainAtA32(a *FuncAudit, off uint64) ([]Step, Decision, error) {
	if off >= a.Func.Size {
		_, err := a.At(off)
		return nil, Decision{}, err
	}
	s := new(scratch)
	a.probeA32(&s.pr, off, a.env)
	if a.Mode == decode.ModeT32 {
		i := sort.Search(len(a.walk), func(i int) bool { return a.walk[i] >= off })
		if i < len(a.walk) && a.walk[i] == off {
			s.pr.itCond = a32ITConds(a)[i]
		}
	}
	var d Decision
	a.Policy.decide(s, &d, a.env, true, a.Mode)
	return s.c.steps, d, nil
}
