package decode

import (
	"errors"
	"fmt"

	"github.com/kboost/kboost/opcodes"
)

// Mode selects an instruction set and its default sizes.
type Mode uint8

const (
	ModeInvalid Mode = iota
	// Mode32 is i386 protected mode: 32-bit default operand and address size.
	Mode32
	// Mode64 is x86-64 long mode: 32-bit default operand size, 64-bit addresses.
	Mode64
	// ModeA64 is ARMv8/v9 AArch64 (A64): 4-byte little-endian instruction words.
	ModeA64
	// ModeA32 is the 32-bit ARM instruction set (A32): 4-byte little-endian words.
	ModeA32
	// ModeT32 is Thumb-2 (T16 and T32): 2- or 4-byte instructions made of
	// little-endian halfwords.
	ModeT32
)

func (m Mode) String() string {
	switch m {
	case Mode32:
		return "32"
	case Mode64:
		return "64"
	case ModeA64:
		return "a64"
	case ModeA32:
		return "a32"
	case ModeT32:
		return "t32"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode accepts "32", "64", "i386", "x86-64", "x86_64", "amd64", "arm64"
// ("aarch64", "a64"), "arm" ("a32", "armhf") and "thumb" ("t32").
func ParseMode(s string) (Mode, error) {
	switch s {
	case "32", "i386", "x86", "386":
		return Mode32, nil
	case "64", "x86-64", "x86_64", "amd64":
		return Mode64, nil
	case "a64", "arm64", "aarch64":
		return ModeA64, nil
	case "a32", "arm", "armhf":
		return ModeA32, nil
	case "t32", "thumb", "thumb2", "thumb-2":
		return ModeT32, nil
	}
	return ModeInvalid, fmt.Errorf("unknown architecture %q (want x86-64, i386, arm64, arm or thumb): %w", s, ErrMode)
}

// Vendor selects the rules where Intel and AMD processors decode differently.
type Vendor uint8

const (
	// VendorIntel: in 64-bit mode near branches (jmp, jcc, call rel) ignore a 66
	// prefix and take a 32-bit displacement. Linux's instruction decoder, and so
	// kprobes, follow this; objdump does with -M intel64.
	VendorIntel Vendor = iota
	// VendorAMD: a 66 prefix gives near branches a 16-bit displacement in 64-bit
	// mode too (AMD APM Vol. 3, "Operand-Size Override"); objdump's default.
	VendorAMD
)

func (v Vendor) String() string {
	switch v {
	case VendorIntel:
		return "intel"
	case VendorAMD:
		return "amd"
	}
	return fmt.Sprintf("Vendor(%d)", uint8(v))
}

// Map is the opcode map an instruction's opcode byte belongs to; defined with the
// opcode data.
type Map = opcodes.Map

// Opcode maps, re-exported from opcodes.
const (
	MapOne   = opcodes.MapOne
	Map0F    = opcodes.Map0F
	Map0F38  = opcodes.Map0F38
	Map0F3A  = opcodes.Map0F3A
	Map3DNow = opcodes.Map3DNow
	MapXOP8  = opcodes.MapXOP8
	MapXOP9  = opcodes.MapXOP9
	MapXOPA  = opcodes.MapXOPA
	MapEVEX5 = opcodes.MapEVEX5
	MapEVEX6 = opcodes.MapEVEX6
)

// Encoding is the prefix scheme that introduced the opcode.
type Encoding uint8

const (
	EncLegacy Encoding = iota // legacy prefixes and escapes (0F, 0F 38, 0F 3A)
	EncVEX2                   // C5 xx
	EncVEX3                   // C4 xx xx
	EncEVEX                   // 62 xx xx xx
	EncXOP                    // 8F xx xx (AMD)
)

func (e Encoding) String() string {
	switch e {
	case EncLegacy:
		return "legacy"
	case EncVEX2:
		return "vex2"
	case EncVEX3:
		return "vex3"
	case EncEVEX:
		return "evex"
	case EncXOP:
		return "xop"
	}
	return fmt.Sprintf("Encoding(%d)", uint8(e))
}

// Prefix is a bit set of the legacy prefixes present.
type Prefix uint16

const (
	PfxES     Prefix = 1 << iota // 26
	PfxCS                        // 2E
	PfxSS                        // 36
	PfxDS                        // 3E
	PfxFS                        // 64
	PfxGS                        // 65
	PfxOpSize                    // 66
	PfxAddr                      // 67
	PfxLock                      // F0
	PfxRepNE                     // F2
	PfxRep                       // F3
)

var prefixBytes = [...]byte{0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3}

// PrefixOf returns the Prefix bit for a legacy prefix byte, or 0.
func PrefixOf(b byte) Prefix {
	for i, p := range prefixBytes {
		if p == b {
			return 1 << i
		}
	}
	return 0
}

func (p Prefix) String() string {
	if p == 0 {
		return "none"
	}
	s := ""
	for i, b := range prefixBytes {
		if p&(1<<i) != 0 {
			if s != "" {
				s += ","
			}
			s += fmt.Sprintf("%02x", b)
		}
	}
	return s
}

// BranchKind classifies control transfers; it is defined with the opcode data.
type BranchKind = opcodes.Branch

// Branch kinds, re-exported from opcodes.
const (
	BranchNone    = opcodes.BranchNone
	BranchJmp     = opcodes.BranchJmp
	BranchJcc     = opcodes.BranchJcc
	BranchLoop    = opcodes.BranchLoop
	BranchCall    = opcodes.BranchCall
	BranchJmpInd  = opcodes.BranchJmpInd
	BranchCallInd = opcodes.BranchCallInd
	BranchJmpFar  = opcodes.BranchJmpFar
	BranchCallFar = opcodes.BranchCallFar
	BranchRet     = opcodes.BranchRet
	BranchRetFar  = opcodes.BranchRetFar
	BranchIret    = opcodes.BranchIret
	BranchInt     = opcodes.BranchInt
	BranchSys     = opcodes.BranchSys
	BranchUD      = opcodes.BranchUD
)

// Inst is one decoded x86 instruction. All offsets are byte offsets from the first
// byte of the instruction; all sizes are in bytes unless the field says bits.
type Inst struct {
	Mode Mode   // the mode it was decoded in
	Addr uint64 // virtual address of the first byte, as passed to Decode
	Len  int    // total length in bytes (1..15); set even when Decode fails
	Raw  [15]byte

	Prefixes   Prefix // legacy prefixes present (duplicates collapse)
	NPrefix    int    // number of legacy prefix bytes, in bytes (duplicates counted)
	LastRep    byte   // the last of F2/F3 seen (mandatory-prefix selection), 0 if none
	Rex        byte   // REX byte (40-4F) if present and effective, else 0
	RexOff     int    // offset of the REX byte; valid when Rex != 0
	Enc        Encoding
	EncOff     int     // offset of the VEX/EVEX/XOP escape byte; valid when Enc != EncLegacy
	EncBytes   [4]byte // the VEX/EVEX/XOP prefix bytes, escape byte first
	VEXW       bool    // VEX/EVEX/XOP .W
	VEXL       uint8   // VEX.L (0,1) or EVEX.L'L (0..3)
	VEXpp      uint8   // implied mandatory prefix: 0 none, 1 66, 2 F3, 3 F2
	VEXvvvv    uint8   // non-inverted vvvv register number (0..15)
	Map        Map
	Opcode     byte // the opcode byte within Map (for 3DNow! the suffix byte)
	OpcodeOff  int  // offset of Opcode (for 3DNow! the offset of the second 0F)
	HasModRM   bool
	ModRM      byte
	ModRMOff   int // valid when HasModRM
	HasSIB     bool
	SIB        byte
	DispOff    int   // offset of the displacement; valid when DispLen > 0
	DispLen    int   // displacement size in bytes: 0, 1, 2, 4 or 8 (moffs)
	Disp       int64 // sign-extended displacement (moffs: zero-extended)
	ImmOff     int   // offset of the first immediate; valid when ImmLen > 0
	ImmLen     int   // first immediate size in bytes: 0, 1, 2, 4 or 8
	Imm        int64 // first immediate, sign-extended
	Imm2Len    int   // second immediate size (ENTER ib, far pointer selector, EXTRQ), bytes
	Imm2       int64 // second immediate, zero-extended
	OpSize     int   // effective operand size in bits: 16, 32 or 64
	AddrSize   int   // effective address size in bits: 16, 32 or 64
	RIPRel     bool  // memory operand is RIP-relative (64-bit mode, mod=00 rm=101, no SIB)
	Branch     BranchKind
	Target     uint64      // absolute target of a relative branch; valid when Branch.Relative() (ARM: also when PCRel)
	Invalid64  bool        // opcode is invalid (#UD) in 64-bit mode (only set in Mode32 results)
	Privileged bool        // raises #GP at CPL 3 (lgdt, hlt, mov cr, in/out under IOPL 0, ...)
	Op         *opcodes.Op // the opcode table entry (nil when Decode failed before it)

	// ARM (ModeA64, ModeA32, ModeT32) only; zero for x86. Len is 4, or 2 for T16.
	// Word is the encoding as the architecture manual writes it: the little-endian
	// word for A64/A32; for T32 the first halfword in bits 31..16 and the second in
	// bits 15..0; for T16 the halfword in bits 15..0.
	Word uint32
	// ArmOp is the encoding-table entry (opcodes.A64 ...) the word matched: its
	// mnemonic, class and flags. nil when Decode failed (unallocated encodings).
	ArmOp *opcodes.ArmOp
	// PCRel is set for ARM instructions that form an address from the PC
	// without branching: ADR, ADRP and literal loads (LDR, LDRSW, PRFM, SIMD&FP
	// LDR literal). Target then holds that address (for ADRP the 4 KiB page)
	// and Disp its byte offset from the instruction's address (for ADRP from
	// Addr &^ 0xfff). For PC-relative branches (Branch.Relative()) Target is
	// the branch target and Disp its byte offset from Addr.
	PCRel bool
}

// Reg returns ModRM.reg (0..7), the group index for group opcodes.
func (i *Inst) Reg() int { return int(i.ModRM>>3) & 7 }

// Mod returns ModRM.mod (0..3).
func (i *Inst) Mod() int { return int(i.ModRM >> 6) }

// RM returns ModRM.rm (0..7).
func (i *Inst) RM() int { return int(i.ModRM) & 7 }

// Bytes returns the instruction's bytes.
func (i *Inst) Bytes() []byte { return i.Raw[:i.Len] }

// End returns the address just past the instruction.
func (i *Inst) End() uint64 { return i.Addr + uint64(i.Len) }

// Sentinel errors. Decode wraps them in a *DecodeError.
var (
	ErrTruncated = errors.New("truncated instruction")
	ErrInvalid   = errors.New("invalid instruction encoding")
	ErrTooLong   = errors.New("instruction longer than 15 bytes")
	ErrMode      = errors.New("unsupported mode")
	// ErrNotSupported is kboost's one "not on this platform" sentinel: every
	// package's stubs for other systems, and live features the running
	// kernel or CPU lacks, return errors wrapping it.
	ErrNotSupported = errors.New("not supported on this platform")
)

// DecodeError reports a failure to decode at Addr. Len is how many bytes the
// decoder consumed before giving up (>= 1 when any input was given), so a linear
// sweep can continue.
type DecodeError struct {
	Addr uint64
	Len  int
	Err  error // one of the sentinels
	Why  string
}

func (e *DecodeError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("decode at %#x: %v: %s", e.Addr, e.Err, e.Why)
	}
	return fmt.Sprintf("decode at %#x: %v", e.Addr, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }
