package boost

// The arm64 kernel's instruction predicates, as functions of the raw A64 word.
// Each is a (mask, value) test exactly as arch/arm64/include/asm/insn.h
// (__AARCH64_INSN_FUNCS) and arch/arm64/lib/insn.c define them in Linux 6.1;
// the kernel's decisions (decode-insn.c) are compositions of these, so the
// policies below reproduce them bit for bit, gaps included. Nothing here
// classifies by the architecture: see boost-arm64 for where the two differ.

// a64Enc is one __AARCH64_INSN_FUNCS entry: code & mask == val.
type a64Enc struct{ mask, val uint32 }

func (e a64Enc) is(w uint32) bool { return w&e.mask == e.val }

// Linux 6.1 arch/arm64/include/asm/insn.h.
var (
	a64ADR       = a64Enc{0x9F000000, 0x10000000}
	a64ADRP      = a64Enc{0x9F000000, 0x90000000}
	a64PRFMLit   = a64Enc{0xFF000000, 0xD8000000}
	a64LDRLit    = a64Enc{0xBF000000, 0x18000000}
	a64LDRSWLit  = a64Enc{0xFF000000, 0x98000000}
	a64Exclusive = a64Enc{0x3F800000, 0x08000000}
	a64LoadEx    = a64Enc{0x3F400000, 0x08400000}
	a64StoreEx   = a64Enc{0x3F400000, 0x08000000}
	a64B         = a64Enc{0xFC000000, 0x14000000}
	a64BL        = a64Enc{0xFC000000, 0x94000000}
	a64CBZ       = a64Enc{0x7F000000, 0x34000000}
	a64CBNZ      = a64Enc{0x7F000000, 0x35000000}
	a64TBZ       = a64Enc{0x7F000000, 0x36000000}
	a64TBNZ      = a64Enc{0x7F000000, 0x37000000}
	a64Bcond     = a64Enc{0xFF000010, 0x54000000}
	a64Exception = a64Enc{0xFF000000, 0xD4000000}
	a64Hint      = a64Enc{0xFFFFF01F, 0xD503201F}
	a64BR        = a64Enc{0xFFFFFC1F, 0xD61F0000}
	a64BRAuth    = a64Enc{0xFEFFF800, 0xD61F0800}
	a64BLR       = a64Enc{0xFFFFFC1F, 0xD63F0000}
	a64BLRAuth   = a64Enc{0xFEFFF800, 0xD63F0800}
	a64RET       = a64Enc{0xFFFFFC1F, 0xD65F0000}
	a64RETAuth   = a64Enc{0xFFFFFBFF, 0xD65F0BFF}
	a64ERET      = a64Enc{0xFFFFFFFF, 0xD69F03E0}
	a64ERETAuth  = a64Enc{0xFFFFFBFF, 0xD69F0BFF}
	a64MRS       = a64Enc{0xFFF00000, 0xD5300000}
	a64MSRImm    = a64Enc{0xFFF8F01F, 0xD500401F}
	a64MSRReg    = a64Enc{0xFFF00000, 0xD5100000}
)

// a64Kernel is what differs between the modelled kernels' arm64 probe code
// (kernel-evolution.md section 10); the rest is 6.1's.
type a64Kernel struct {
	name string
	// bcond is aarch64_insn_is_bcond: 6.1's and 6.18.0's mask 0xFF000010
	// misses the hinted BC.cond (bit 4 set), which Debian's 6.12.117 and 7.2.13
	// (0xFF000000) simulate.
	bcond a64Enc
	// mops: aarch64_insn_is_steppable refuses FEAT_MOPS CPY*/SET* (6.12).
	mops bool
	// loadEx, storeEx are the is_probed_address_atomic masks (bit 23 added
	// upstream in 6.15: LDAR/STLR no longer count).
	loadEx, storeEx a64Enc
	// nopSim: arm_probe_decode_insn simulates NOP first (simulate_nop, upstream
	// 6.13).
	nopSim bool
	// splitRet: RET has its own handler (simulate_ret), BR/BLR simulate_br_blr
	// (upstream 6.18, 47687aa4d9c9 "arm64: probes: Break ret out from bl/blr").
	splitRet bool
}

var (
	a64K61  = &a64Kernel{name: "6.1", bcond: a64Bcond, loadEx: a64LoadEx, storeEx: a64StoreEx}
	a64K612 = &a64Kernel{name: "6.12", bcond: a64Enc{0xFF000000, 0x54000000}, mops: true, loadEx: a64LoadEx, storeEx: a64StoreEx}
	// a64K618 is 6.18.0's, read from its source (fetched by hand; see
	// testdata/linux-6.18-arm64.golden): 6.12's MOPS refusal, NOP simulated
	// (upstream 6.13), RET split from BR/BLR (47687aa4d9c9, the 6.18 merge), the
	// exclusive masks with bit 23 (6.15), and 6.1's B.cond mask 0xFF000010:
	// the hinted BC.cond is stepped, not simulated as Debian's 6.12.117 and
	// 7.2.13 do (6.18.2, 6.18.3 and 6.18.32 copies have the same insn.h).
	a64K618 = &a64Kernel{name: "6.18", bcond: a64Bcond, mops: true,
		loadEx: a64Enc{0x3FC00000, 0x08400000}, storeEx: a64Enc{0x3FC00000, 0x08000000}, nopSim: true, splitRet: true}
	// a64K72 is 6.18 with the B.cond mask 0xFF000000 (BC.cond simulated):
	// the other changes kernel-evolution.md section 10 finds between Debian's
	// 6.12.117 and 7.2.13 had landed by 6.18 (the GCS handling inside
	// simulate_ret and update_lr is run-time only).
	a64K72 = &a64Kernel{name: "7.2", bcond: a64Enc{0xFF000000, 0x54000000}, mops: true,
		loadEx: a64K618.loadEx, storeEx: a64K618.storeEx, nopSim: true, splitRet: true}
	// a64MOPS is 6.12 insn.h's mops: CPY*/SET* (prologue, main, epilogue).
	a64MOPS = a64Enc{0x3B200C00, 0x19000400}
)

// Words the kernel writes.
const (
	a64BreakMon   = 0xD4200000             // AARCH64_BREAK_MON: BRK #0
	a64BrkKprobe  = a64BreakMon | 0x004<<5 // BRK64_OPCODE_KPROBES (BRK #4)
	a64BrkUprobe  = a64BreakMon | 0x005<<5 // BRK64_OPCODE_UPROBES (BRK #5), UPROBE_SWBP_INSN
	a64BrkKprobSS = a64BreakMon | 0x006<<5 // BRK64_OPCODE_KPROBES_SS (BRK #6)
	a64NOP        = 0xD503201F             // HINT #0
	a64MovX9LR    = 0xAA1E03E9             // mov x9, x30: ftrace_init_nop's first word
	a64SpclDAIF   = 0xDA11                 // AARCH64_INSN_SPCLREG_DAIF
	a64MaxAtomic  = 128 / 4                // MAX_ATOMIC_CONTEXT_SIZE (instructions)
	a64BRange     = 1 << 27                // B imm26: +-128 MiB
	a64BOpcode    = uint32(0x14000000)     // B
	a64BImmMask   = uint32(0x03FFFFFF)     // imm26
	a64ClassBRSys = 0xA                    // AARCH64_INSN_CLS_BR_SYS rows 0xA, 0xB
	a64HintMaskF  = 0xFE0                  // insn & 0xFE0: CRm:op2 of a HINT
)

// a64Class is aarch64_get_insn_class(): the kernel's encoding class of bits
// 28:25 (aarch64_insn_encoding_class[]).
type a64Class uint8

const (
	a64ClsUnknown a64Class = iota // UNALLOCATED (and UDF)
	a64ClsSVE
	a64ClsDPImm
	a64ClsDPReg
	a64ClsDPFPSIMD
	a64ClsLdSt
	a64ClsBrSys
)

var a64ClassTable = [16]a64Class{
	a64ClsUnknown, a64ClsUnknown, a64ClsSVE, a64ClsUnknown,
	a64ClsLdSt, a64ClsDPReg, a64ClsLdSt, a64ClsDPFPSIMD,
	a64ClsDPImm, a64ClsDPImm, a64ClsBrSys, a64ClsBrSys,
	a64ClsLdSt, a64ClsDPReg, a64ClsLdSt, a64ClsDPFPSIMD,
}

var a64ClassNames = [...]string{"unallocated", "SVE", "data processing (immediate)", "data processing (register)",
	"data processing (SIMD and FP)", "loads and stores", "branch, exception generation and system"}

func (c a64Class) String() string { return a64ClassNames[c] }

func a64ClassOf(w uint32) a64Class { return a64ClassTable[(w>>25)&0xF] }

// a64SteppableHints is the allow-list of aarch64_insn_is_steppable_hint()
// (insn & 0xFE0): NOP, XPACLRI, PACIA1716, PACIB1716, PACIAZ, PACIASP, PACIBZ,
// PACIBSP, BTI, BTI c, BTI j, BTI jc.
var a64SteppableHints = [...]uint32{0x00 << 5, 0x07 << 5, 0x08 << 5, 0x0A << 5, 0x18 << 5, 0x19 << 5,
	0x1A << 5, 0x1B << 5, 0x20 << 5, 0x22 << 5, 0x24 << 5, 0x26 << 5}

func a64IsSteppableHint(w uint32) bool {
	if !a64Hint.is(w) {
		return false
	}
	for _, h := range a64SteppableHints {
		if w&a64HintMaskF == h {
			return true
		}
	}
	return false
}

// a64UsesLiteral is aarch64_insn_uses_literal(): LDR/LDRSW/PRFM literal, ADR, ADRP.
func a64UsesLiteral(w uint32) bool {
	return a64LDRLit.is(w) || a64LDRSWLit.is(w) || a64ADR.is(w) || a64ADRP.is(w) || a64PRFMLit.is(w)
}

// a64IsBranch is aarch64_insn_is_branch() (with kernel k's B.cond mask).
func (k *a64Kernel) a64IsBranch(w uint32) bool {
	return a64B.is(w) || a64BL.is(w) || a64CBZ.is(w) || a64CBNZ.is(w) || a64TBZ.is(w) || a64TBNZ.is(w) ||
		a64RET.is(w) || a64RETAuth.is(w) || a64BR.is(w) || a64BRAuth.is(w) || a64BLR.is(w) ||
		a64BLRAuth.is(w) || k.bcond.is(w)
}

// a64SysReg is aarch64_insn_extract_system_reg().
func a64SysReg(w uint32) uint32 { return (w & 0x1FFFE0) >> 5 }

// a64StepWhy says why aarch64_insn_is_steppable() answered as it did.
type a64StepWhy uint8

const (
	a64StepOK        a64StepWhy = iota // steppable (the final "return true" of its class)
	a64StepBranch                      // BR_SYS: aarch64_insn_is_branch
	a64StepMSRImm                      // BR_SYS: MSR (immediate)
	a64StepMSRReg                      // BR_SYS: MSR (register)
	a64StepException                   // BR_SYS: exception generation
	a64StepERET                        // BR_SYS: ERET
	a64StepERETAuth                    // BR_SYS: ERETAA/ERETAB
	a64StepMRS                         // BR_SYS: MRS other than DAIF (steppable)
	a64StepMRSDAIF                     // BR_SYS: MRS DAIF (not steppable: the slot runs with DAIF masked)
	a64StepHintBad                     // BR_SYS: HINT not on the allow-list
	a64StepHintOK                      // BR_SYS: HINT on the allow-list (steppable)
	a64StepLiteral                     // other class: aarch64_insn_uses_literal
	a64StepExclusive                   // other class: aarch64_insn_is_exclusive
	a64StepMOPS                        // other class: aarch64_insn_is_mops (6.12)
)

// a64Steppable is aarch64_insn_is_steppable() (decode-insn.c) of kernel k.
func (k *a64Kernel) a64Steppable(w uint32) (bool, a64StepWhy) {
	if a64ClassOf(w) == a64ClsBrSys {
		switch {
		case k.a64IsBranch(w):
			return false, a64StepBranch
		case a64MSRImm.is(w):
			return false, a64StepMSRImm
		case a64MSRReg.is(w):
			return false, a64StepMSRReg
		case a64Exception.is(w):
			return false, a64StepException
		case a64ERET.is(w):
			return false, a64StepERET
		case a64ERETAuth.is(w):
			return false, a64StepERETAuth
		}
		if a64MRS.is(w) {
			if a64SysReg(w) == a64SpclDAIF {
				return false, a64StepMRSDAIF
			}
			return true, a64StepMRS
		}
		if a64Hint.is(w) {
			if a64IsSteppableHint(w) {
				return true, a64StepHintOK
			}
			return false, a64StepHintBad
		}
		return true, a64StepOK
	}
	if a64UsesLiteral(w) {
		return false, a64StepLiteral
	}
	if a64Exclusive.is(w) {
		return false, a64StepExclusive
	}
	if k.mops && a64MOPS.is(w) {
		return false, a64StepMOPS
	}
	return true, a64StepOK
}

// a64Sim names the simulation routine (simulate-insn.c) the kernel installs.
type a64Sim uint8

const (
	a64SimNone a64Sim = iota
	a64SimBCond
	a64SimCBZ
	a64SimTBZ
	a64SimADR
	a64SimBBL
	a64SimBRBLRRET
	a64SimLDRLit
	a64SimLDRSWLit
	a64SimBRBLR // 7.2
	a64SimRET   // 7.2
	a64SimNOP   // 7.2
	numA64Sims
)

// a64SimNames are the kernel's handler names.
var a64SimNames = [numA64Sims]string{"", "simulate_b_cond", "simulate_cbz_cbnz", "simulate_tbz_tbnz",
	"simulate_adr_adrp", "simulate_b_bl", "simulate_br_blr_ret", "simulate_ldr_literal", "simulate_ldrsw_literal",
	"simulate_br_blr", "simulate_ret", "simulate_nop"}

func (s a64Sim) String() string { return a64SimNames[s] }

// a64Decode is the outcome of arm_probe_decode_insn / arm_kprobe_decode_insn.
type a64Decode uint8

const (
	a64Rejected  a64Decode = iota // INSN_REJECTED
	a64GoodNoSlt                  // INSN_GOOD_NO_SLOT (simulated)
	a64Good                       // INSN_GOOD (stepped in a slot)
)

// a64ProbeDecode is arm_probe_decode_insn() (shared by kprobes and uprobes).
func (k *a64Kernel) a64ProbeDecode(w uint32) (a64Decode, a64Sim, a64StepWhy) {
	if k.nopSim && w == a64NOP {
		return a64GoodNoSlt, a64SimNOP, a64StepHintOK
	}
	ok, why := k.a64Steppable(w)
	if ok {
		return a64Good, a64SimNone, why
	}
	switch {
	case k.bcond.is(w):
		return a64GoodNoSlt, a64SimBCond, why
	case a64CBZ.is(w) || a64CBNZ.is(w):
		return a64GoodNoSlt, a64SimCBZ, why
	case a64TBZ.is(w) || a64TBNZ.is(w):
		return a64GoodNoSlt, a64SimTBZ, why
	case a64ADR.is(w) || a64ADRP.is(w):
		return a64GoodNoSlt, a64SimADR, why
	case a64B.is(w) || a64BL.is(w):
		return a64GoodNoSlt, a64SimBBL, why
	case k.splitRet && (a64BR.is(w) || a64BLR.is(w)):
		return a64GoodNoSlt, a64SimBRBLR, why
	case k.splitRet && a64RET.is(w):
		return a64GoodNoSlt, a64SimRET, why
	case a64BR.is(w) || a64BLR.is(w) || a64RET.is(w):
		return a64GoodNoSlt, a64SimBRBLRRET, why
	}
	return a64Rejected, a64SimNone, why
}

// a64KprobeDecode is arm_kprobe_decode_insn() without the atomic back-scan:
// LDR/LDRSW literal are simulated before arm_probe_decode_insn is asked.
func (k *a64Kernel) a64KprobeDecode(w uint32) (a64Decode, a64Sim, a64StepWhy) {
	switch {
	case a64LDRLit.is(w):
		return a64GoodNoSlt, a64SimLDRLit, a64StepLiteral
	case a64LDRSWLit.is(w):
		return a64GoodNoSlt, a64SimLDRSWLit, a64StepLiteral
	}
	return k.a64ProbeDecode(w)
}

// a64AtomicScan is is_probed_address_atomic() as arm_kprobe_decode_insn calls it
// for a probe at byte offset off of a symbol whose words are text (text[i] at
// offset 4*i): it walks back from the previous word to the symbol start or 32
// words, whichever is nearer; a store-exclusive first means no, a
// load-exclusive first means yes. It returns the offset of the deciding
// load-exclusive. Words the walk cannot read (before text) end it.
func (k *a64Kernel) a64AtomicScan(text []uint32, off uint64) (atomic bool, at uint64) {
	probe := int64(off / 4)
	var end int64
	if off < a64MaxAtomic*4 {
		end = probe - int64(off/4)
	} else {
		end = probe - a64MaxAtomic
	}
	for i := probe - 1; i >= end; i-- {
		if i < 0 || i >= int64(len(text)) {
			return false, 0
		}
		w := text[i]
		if k.storeEx.is(w) {
			return false, 0
		}
		if k.loadEx.is(w) {
			return true, uint64(i) * 4
		}
	}
	return false, 0
}
