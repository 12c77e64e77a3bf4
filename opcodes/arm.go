package opcodes

import "fmt"

// ArmOp is one encoding of an ARM instruction set (A64 today; A32 and T32 use
// the same type): the instruction word w is this encoding when
// w&Mask == Value and Cond holds for w. Tables list ops in spec order and the
// first match wins, so an alias (mov for orr with the zero register) or a
// carve-out (an unallocated field value) is written before the general form.
type ArmOp struct {
	Name   string   // mnemonic as GNU objdump prints it, lower case; "b.<cond>" has the condition substituted when printed
	Mask   uint32   // bits fixed by the encoding
	Value  uint32   // their values
	Class  ArmClass // encoding-space class
	Flags  ArmFlags // properties, see the Arm* flag constants
	Branch Branch   // control-transfer kind (BranchNone for none)
	Cond   ArmCond  // extra condition on operand fields (aliases); ArmCondNone for none
	Line   int      // line of the spec file that defined it
	File   string   // that spec file's base name (arm64.spec, or a file it includes)
}

// Unallocated reports whether the op is a carve-out of unallocated encodings.
func (op *ArmOp) Unallocated() bool { return op.Class == ArmUnallocated }

// Match reports whether w is this encoding.
func (op *ArmOp) Match(w uint32) bool {
	return w&op.Mask == op.Value && op.Cond.Holds(w)
}

// ArmClass is the part of the encoding space an instruction belongs to, in the
// Arm Architecture Reference Manual's top-level grouping.
type ArmClass uint8

const (
	ArmUnallocated ArmClass = iota // unallocated or reserved: UNDEFINED
	ArmBranch                      // branches (immediate, conditional, compare/test, register)
	ArmException                   // exception generation and return (SVC, HVC, SMC, BRK, HLT, DCPS, UDF)
	ArmSystem                      // hints, barriers, PSTATE, MSR/MRS, SYS/SYSL
	ArmLoadStore                   // loads and stores of general and SIMD&FP registers
	ArmDataImm                     // data processing, immediate (incl. ADR/ADRP)
	ArmDataReg                     // data processing, register
	ArmFPSIMD                      // scalar floating-point and Advanced SIMD data processing
	ArmSVE                         // Scalable Vector Extension
	ArmSME                         // Scalable Matrix Extension
	NumArmClasses
)

var armClassNames = [...]string{"unallocated", "branch", "exception", "system", "loadstore", "dpimm", "dpreg", "fpsimd", "sve", "sme"}

func (c ArmClass) String() string {
	if int(c) < len(armClassNames) {
		return armClassNames[c]
	}
	return fmt.Sprintf("ArmClass(%d)", uint8(c))
}

// ParseArmClass returns the class named as in the spec files.
func ParseArmClass(s string) (ArmClass, bool) {
	for i, n := range armClassNames {
		if n == s {
			return ArmClass(i), true
		}
	}
	return 0, false
}

// ArmFlags are properties of an encoding.
type ArmFlags uint32

const (
	ArmPCRel     ArmFlags = 1 << iota // reads the PC: ADR, ADRP, literal loads, relative branches
	ArmLoad                           // reads memory
	ArmStore                          // writes memory
	ArmExclusive                      // load/store exclusive (sets or tests the exclusive monitor)
	ArmAcquire                        // acquire semantics
	ArmRelease                        // release semantics
	ArmAtomic                         // single-copy atomic read-modify-write (LSE: LDADD, CAS, SWP ...)
	ArmPair                           // two registers (LDP, STP, LDXP, CASP ...)
	ArmSIMDReg                        // transfers SIMD&FP registers
	ArmHint                           // in the HINT space (executes as NOP where not implemented)
	ArmPAC                            // pointer authentication (PACIASP, AUTIASP, RETAA, LDRAA ...)
	ArmBTI                            // branch target identification landing pad
	ArmBarrier                        // memory or instruction barrier
	ArmSysReg                         // reads or writes a system register or PSTATE field (MSR, MRS, SYS)
	ArmWriteback                      // base register writeback (pre/post-index)
	ArmMOPS                           // memory copy/set (FEAT_MOPS) prologue/main/epilogue
	ArmAlias                          // a preferred-disassembly alias of a more general encoding
	ArmGroup                          // the line classifies a whole encoding group; Name is only its typical mnemonic
	ArmITFlags                        // T16: sets the flags only outside an IT block; inside one the mnemonic drops its final "s"
)

var armFlagNames = [...]string{"pcrel", "load", "store", "excl", "acq", "rel", "atomic", "pair", "simd",
	"hint", "pac", "bti", "barrier", "sysreg", "wb", "mops", "alias", "group", "itflags"}

func (f ArmFlags) String() string { return bitNames(uint32(f), armFlagNames[:]) }

// ParseArmFlag returns the flag named as in the spec files.
func ParseArmFlag(s string) (ArmFlags, bool) {
	for i, n := range armFlagNames {
		if n == s {
			return 1 << i, true
		}
	}
	return 0, false
}

// ArmCond is a condition on operand fields that a mask and value cannot say:
// the Arm ARM's alias conditions ("Rn == Rm", "UInt(imms) < UInt(immr)") named
// in the spec with if=NAME. Field positions are the A64 ones.
type ArmCond uint8

const (
	ArmCondNone        ArmCond = iota
	ArmCondRnEqRm              // Rn (9..5) == Rm (20..16)
	ArmCondRnEqRmNotAL         // Rn == Rm and cond (15..12) is not 111x
	ArmCondNotAL               // cond (15..12) is not 111x
	ArmCondImmsLtImmr          // imms (15..10) < immr (21..16)
	ArmCondLSL                 // imms+1 == immr (UBFM as LSL; imms is not all ones by the pattern)
	ArmCondRdOrRnSP            // Rd (4..0) == 31 or Rn (9..5) == 31
	ArmCondMovz                // not (imm16 == 0 and hw != 0)
	ArmCondMovn                // as ArmCondMovz and, for 32 bits, imm16 != 0xffff
	ArmCondOrrMov              // ORR immediate as MOV: the immediate is not a MOVZ/MOVN immediate
	ArmCondBadMask             // N:immr:imms is a reserved logical immediate
	ArmCondOddPair             // Rs (20..16) or Rt (4..0) is odd (CASP register pairs)
	ArmCondRtEqRt2             // Rt (4..0) == Rt2 (14..10)
	ArmCondWBOverlap           // Rn (9..5) is not SP and equals Rt (4..0) or Rt2 (14..10)
	ArmCondMOPSRegs            // MOPS registers Rd, Rn, Rs not distinct, or Rd/Rn (or Rs of a copy) is 31
	ArmCondRdEqRm              // Rd (4..0) == Rm (20..16): SEL (vectors) as MOV
	ArmCondPdEqPm              // Pd (3..0) == Pm (19..16): SEL (predicates) as MOV
	ArmCondPmEqPg              // Pm (19..16) == Pg (13..10): EOR(S) (predicates) as NOT(S)
	ArmCondPnEqPmEqPg          // Pn (8..5) == Pm (19..16) == Pg (13..10): ORR(S) (predicates) as MOV(S)
	ArmCondSVEBadMask          // SVE imm13 (17..5, N:immr:imms) is a reserved logical immediate
	ArmCondSVEMovMask          // SVEMoveMaskPreferred(imm13): DUPM as MOV
	NumArmConds
)

var armCondNames = [...]string{"", "rn=rm", "rn=rm&!al", "!al", "imms<immr", "lsl", "rd/rn=sp", "movz", "movn", "orrmov", "badmask", "oddpair", "rt=rt2", "wboverlap", "mopsregs",
	"rd=rm", "pd=pm", "pm=pg", "pn=pm=pg", "sve-badmask", "sve-movmask"}

func (c ArmCond) String() string {
	if int(c) < len(armCondNames) {
		return armCondNames[c]
	}
	return fmt.Sprintf("ArmCond(%d)", uint8(c))
}

// ParseArmCond returns the condition named as in the spec files (after if=).
func ParseArmCond(s string) (ArmCond, bool) {
	for i, n := range armCondNames {
		if i > 0 && n == s {
			return ArmCond(i), true
		}
	}
	return 0, false
}

// Holds reports whether the condition holds for the word w.
func (c ArmCond) Holds(w uint32) bool {
	switch c {
	case ArmCondNone:
		return true
	case ArmCondRnEqRm:
		return w>>5&31 == w>>16&31
	case ArmCondRnEqRmNotAL:
		return w>>5&31 == w>>16&31 && w>>13&7 != 7
	case ArmCondNotAL:
		return w>>13&7 != 7
	case ArmCondImmsLtImmr:
		return w>>10&63 < w>>16&63
	case ArmCondLSL:
		return w>>10&63+1 == w>>16&63
	case ArmCondRdOrRnSP:
		return w&31 == 31 || w>>5&31 == 31
	case ArmCondMovz:
		return !(w>>5&0xffff == 0 && w>>21&3 != 0)
	case ArmCondMovn:
		if w>>5&0xffff == 0 && w>>21&3 != 0 {
			return false
		}
		return w>>31 == 1 || w>>5&0xffff != 0xffff
	case ArmCondOrrMov:
		sf := w >> 31
		imm, ok := A64BitMask(w>>22&1, w>>16&63, w>>10&63, sf == 1)
		if !ok {
			return false
		}
		return !moveWideImm(imm, sf == 1)
	case ArmCondRtEqRt2:
		return w&31 == w>>10&31
	case ArmCondWBOverlap:
		rn := w >> 5 & 31
		return rn != 31 && (rn == w&31 || rn == w>>10&31)
	case ArmCondMOPSRegs:
		d, n, s := w&31, w>>5&31, w>>16&31
		set := w>>22&3 == 3 && w>>26&1 == 0 || w>>22&3 == 3
		return d == n || d == s || n == s || d == 31 || n == 31 || !set && s == 31
	case ArmCondOddPair:
		return w>>16&1 == 1 || w&1 == 1
	case ArmCondBadMask:
		_, ok := A64BitMask(w>>22&1, w>>16&63, w>>10&63, w>>31 == 1)
		return !ok
	case ArmCondRdEqRm:
		return w&31 == w>>16&31
	case ArmCondPdEqPm:
		return w&15 == w>>16&15
	case ArmCondPmEqPg:
		return w>>16&15 == w>>10&15
	case ArmCondPnEqPmEqPg:
		return w>>5&15 == w>>16&15 && w>>16&15 == w>>10&15
	case ArmCondSVEBadMask:
		_, ok := A64BitMask(w>>17&1, w>>11&63, w>>5&63, true)
		return !ok
	case ArmCondSVEMovMask:
		imm, ok := A64BitMask(w>>17&1, w>>11&63, w>>5&63, true)
		return ok && sveMoveMaskPreferred(imm)
	}
	return false
}

// ArmISA names an ARM instruction set of a table.
type ArmISA uint8

const (
	ArmA64 ArmISA = iota // AArch64
	ArmA32               // AArch32 ARM
	ArmT32               // AArch32 Thumb (T16 in bits 15..0, T32 as two halfwords)
)

var armISANames = [...]string{"a64", "a32", "t32"}

func (i ArmISA) String() string {
	if int(i) < len(armISANames) {
		return armISANames[i]
	}
	return fmt.Sprintf("ArmISA(%d)", uint8(i))
}

// ArmTable is a generated table of encodings with a lookup index: the ops that
// can match a word w are listed, in spec order, in the bucket
// Index[w>>KeyShift & (1<<KeyBits-1)]; a crowded bucket is split again on a
// second field of the word chosen by the generator.
type ArmTable struct {
	ISA      ArmISA
	Ops      []ArmOp
	KeyShift uint
	KeyBits  uint
	Index    []ArmBucket
}

// ArmBucket is one bucket of an ArmTable index: either the candidate ops
// (indexes into ArmTable.Ops, in spec order) or, when SubBits > 0, a second
// level keyed by w>>SubShift & (1<<SubBits-1).
type ArmBucket struct {
	Ops      []uint16
	SubShift uint8
	SubBits  uint8
	Sub      [][]uint16
}

// Lookup returns the first op matching w, or nil when no line of the spec
// covers w. An op with Class ArmUnallocated means w is UNDEFINED.
func (t *ArmTable) Lookup(w uint32) *ArmOp {
	b := &t.Index[w>>t.KeyShift&(1<<t.KeyBits-1)]
	list := b.Ops
	if b.SubBits > 0 {
		list = b.Sub[w>>b.SubShift&(1<<b.SubBits-1)]
	}
	for _, i := range list {
		op := &t.Ops[i]
		if w&op.Mask == op.Value && (op.Cond == ArmCondNone || op.Cond.Holds(w)) {
			return op
		}
	}
	return nil
}
