package decode

import (
	"strconv"
	"strings"

	"github.com/kboost/kboost/opcodes"
	"golang.org/x/arch/arm64/arm64asm"
)

var a64CondNames = [16]string{"eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al", "nv"}

// A64Mnemonic returns the mnemonic of a decoded A64 instruction as GNU objdump
// prints it, from the encoding table alone ("b.eq" with the condition filled
// in), or "" when inst was not decoded.
func A64Mnemonic(inst *Inst) string {
	if inst.ArmOp == nil {
		return ""
	}
	name := inst.ArmOp.Name
	if strings.HasSuffix(name, ".<cond>") {
		return name[:len(name)-len("<cond>")] + a64CondNames[inst.Word&15]
	}
	return name
}

// formatA64 is Format for ModeA64. It renders with golang.org/x/arch's
// arm64asm in GNU syntax where arm64asm knows the encoding and names it as the
// encoding table does; PC-relative operands become absolute addresses. Where
// arm64asm cannot decode the word (LSE atomics, pointer authentication, SVE,
// SME, MOPS, ... ) or prints a generic form (HINT #n for PACIASP or BTI),
// kboost renders it itself: the table's mnemonic and its operands for the
// common families, the raw word otherwise.
func formatA64(inst *Inst, symname func(uint64) (string, uint64)) string {
	if inst.ArmOp == nil {
		return "(bad)"
	}
	own := A64Mnemonic(inst)
	if xi, err := arm64asm.Decode(inst.Raw[:4]); err == nil {
		text := strings.TrimSpace(arm64asm.GNUSyntax(xi))
		mn := text
		if i := strings.IndexByte(text, ' '); i >= 0 {
			mn = text[:i]
		}
		if mn == own || a64Placeholder(inst.ArmOp) {
			if inst.Branch.Relative() || inst.PCRel {
				text = a64AbsTarget(text, inst.Target, symname)
			}
			return text
		}
	}
	return own + a64Operands(inst, own, symname)
}

// a64Placeholder reports whether op is a group-level line of the spec (the
// Advanced SIMD groups, SVE, SME) whose name stands for the group: arm64asm's
// name is better there.
func a64Placeholder(op *opcodes.ArmOp) bool {
	return op.Flags&opcodes.ArmGroup != 0
}

// a64AbsTarget replaces arm64asm's relative ".+0x10" operand by the absolute
// target (or symbol).
func a64AbsTarget(text string, target uint64, symname func(uint64) (string, uint64)) string {
	i := strings.Index(text, ".+0x")
	if i < 0 {
		i = strings.Index(text, ".-0x")
	}
	if i < 0 {
		return text
	}
	j := i + 2
	for j < len(text) && (text[j] == 'x' || isHexDigit(text[j])) {
		j++
	}
	return text[:i] + a64Addr(target, symname) + text[j:]
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func a64Addr(target uint64, symname func(uint64) (string, uint64)) string {
	s := "0x" + strconv.FormatUint(target, 16)
	if symname != nil {
		if name, base := symname(target); name != "" {
			if target != base {
				return s + " <" + name + "+0x" + strconv.FormatUint(target-base, 16) + ">"
			}
			return s + " <" + name + ">"
		}
	}
	return s
}

func a64Reg(n uint32, x bool, sp bool) string {
	if n == 31 {
		switch {
		case sp && x:
			return "sp"
		case sp:
			return "wsp"
		case x:
			return "xzr"
		}
		return "wzr"
	}
	if x {
		return "x" + strconv.Itoa(int(n))
	}
	return "w" + strconv.Itoa(int(n))
}

// a64Operands renders the operands of the families arm64asm does not know;
// anything else gets the raw word so nothing is lost.
func a64Operands(inst *Inst, name string, symname func(uint64) (string, uint64)) string {
	w := inst.Word
	op := inst.ArmOp
	rt, rn, rs := w&31, w>>5&31, w>>16&31
	mem := "[" + a64Reg(rn, true, true) + "]"
	switch {
	case op.Flags&opcodes.ArmHint != 0 && name == "bti":
		return [4]string{"", " c", " j", " jc"}[w>>6&3]
	case name == "psb" || name == "tsb":
		return " csync"
	case op.Flags&opcodes.ArmHint != 0 && name == "hint":
		return " #0x" + strconv.FormatUint(uint64(w>>5&0x7F), 16)
	case op.Flags&opcodes.ArmHint != 0, name == "retaa", name == "retab", name == "eretaa", name == "eretab",
		name == "cfinv", name == "xaflag", name == "axflag", name == "ssbb", name == "pssbb", name == "sb",
		name == "tcommit", name == "drps", name == "eret":
		return ""
	case op.Flags&opcodes.ArmAtomic != 0 && op.Flags&opcodes.ArmPair != 0: // CASP
		x := w>>30&1 == 1
		return " " + a64Reg(rs, x, false) + ", " + a64Reg(rs+1, x, false) + ", " + a64Reg(rt, x, false) + ", " + a64Reg(rt+1, x, false) + ", " + mem
	case op.Flags&opcodes.ArmAtomic != 0 && strings.HasPrefix(name, "st"): // STADD ... (Rt = zr)
		return " " + a64Reg(rs, w>>30 == 3, false) + ", " + mem
	case op.Flags&opcodes.ArmAtomic != 0: // LDADD, SWP, CAS
		x := w>>30 == 3
		return " " + a64Reg(rs, x, false) + ", " + a64Reg(rt, x, false) + ", " + mem
	case strings.HasPrefix(name, "ldapr"):
		return " " + a64Reg(rt, w>>30 == 3, false) + ", " + mem
	case op.Class == opcodes.ArmBranch && op.Flags&opcodes.ArmPAC != 0: // BRAA, BLRAAZ ...
		if w&31 == 31 {
			return " " + a64Reg(rn, true, false)
		}
		return " " + a64Reg(rn, true, false) + ", " + a64Reg(rt, true, true)
	case op.Class == opcodes.ArmDataReg && op.Flags&opcodes.ArmPAC != 0:
		if rn == 31 && strings.Contains(name, "z") || strings.HasPrefix(name, "xpac") {
			return " " + a64Reg(rt, true, false)
		}
		return " " + a64Reg(rt, true, false) + ", " + a64Reg(rn, true, true)
	case inst.Branch.Relative() || inst.PCRel:
		return " " + a64Addr(inst.Target, symname)
	case op.Class == opcodes.ArmSVE && (name == "ldr" || name == "str"): // Z or P register, [Xn, #imm, mul vl]
		reg := "z" + strconv.Itoa(int(rt))
		if w>>14&1 == 0 {
			reg = "p" + strconv.Itoa(int(rt&15))
		}
		s := " " + reg + ", [" + a64Reg(rn, true, true)
		if imm := sext((w>>16&0x3F)<<3|w>>10&7, 9); imm != 0 {
			s += ", #" + strconv.FormatInt(imm, 10) + ", mul vl"
		}
		return s + "]"
	case name == "pfalse" || name == "rdffr" && w&0xFFFFFFF0 == 0x2519F000:
		return " p" + strconv.Itoa(int(w&15)) + ".b"
	case name == "rdffr" || name == "rdffrs":
		return " p" + strconv.Itoa(int(w&15)) + ".b, p" + strconv.Itoa(int(w>>5&15)) + "/z"
	case name == "wrffr":
		return " p" + strconv.Itoa(int(w>>5&15)) + ".b"
	case name == "setffr":
		return ""
	case name == "rdvl" || name == "rdsvl":
		return " " + a64Reg(rt, true, false) + ", #" + strconv.FormatInt(sext(w>>5&63, 6), 10)
	case name == "addvl" || name == "addpl":
		return " " + a64Reg(rt, true, true) + ", " + a64Reg(rs, true, true) + ", #" + strconv.FormatInt(sext(w>>5&63, 6), 10)
	case op.Class == opcodes.ArmSME: // a64_format_sme.go
		return a64SMEOperands(inst, name)
	case name == "udf":
		return " #" + strconv.FormatUint(uint64(w&0xFFFF), 10)
	case op.Class == opcodes.ArmException && name != "tcancel" && !strings.HasPrefix(name, "dcps"):
		return " #0x" + strconv.FormatUint(uint64(w>>5&0xFFFF), 16)
	case name == "dc" || name == "ic" || name == "at" || name == "tlbi" || name == "cfp" || name == "dvp" || name == "cpp":
		s := " " + a64SysOps[uint16(w>>5&0x3FFF)]
		if rt != 31 || !strings.Contains(s, "all") {
			s += ", " + a64Reg(rt, true, false)
		}
		return s
	case name == "msr" && w>>19&3 == 0 && w>>21&1 == 0, name == "mrs" && w>>19&3 == 0:
		sr := "s" + strconv.Itoa(int(w>>19&3)) + "_" + strconv.Itoa(int(w>>16&7)) + "_c" + strconv.Itoa(int(w>>12&15)) +
			"_c" + strconv.Itoa(int(w>>8&15)) + "_" + strconv.Itoa(int(w>>5&7))
		if name == "mrs" {
			return " " + a64Reg(rt, true, false) + ", " + sr
		}
		return " " + sr + ", " + a64Reg(rt, true, false)
	case op.Class == opcodes.ArmLoadStore && op.Flags&opcodes.ArmPAC != 0: // LDRAA, LDRAB
		imm := sext((w>>22&1)<<9|w>>12&0x1FF, 10) << 3
		s := " " + a64Reg(rt, true, false) + ", [" + a64Reg(rn, true, true)
		if imm != 0 {
			s += ", #" + strconv.FormatInt(imm, 10)
		}
		s += "]"
		if w>>11&1 == 1 {
			s += "!"
		}
		return s
	case op.Class == opcodes.ArmLoadStore && (strings.HasPrefix(name, "ldlar") || strings.HasPrefix(name, "stllr")):
		return " " + a64Reg(rt, w>>30 == 3, false) + ", " + mem
	case op.Class == opcodes.ArmLoadStore && (strings.HasPrefix(name, "ldapur") || strings.HasPrefix(name, "stlur")):
		x := w>>30 == 3 || strings.HasPrefix(name, "ldapurs") && (w>>22&1 == 0 || w>>30 == 2)
		s := " " + a64Reg(rt, x, false) + ", [" + a64Reg(rn, true, true)
		if imm := sext(w>>12&0x1FF, 9); imm != 0 {
			s += ", #" + strconv.FormatInt(imm, 10)
		}
		return s + "]"
	case name == "addg" || name == "subg":
		return " " + a64Reg(rt, true, true) + ", " + a64Reg(rn, true, true) + ", #" + strconv.Itoa(int(w>>16&63)*16) + ", #" + strconv.Itoa(int(w>>10&15))
	case op.Class == opcodes.ArmDataImm && (name == "smax" || name == "smin" || name == "umax" || name == "umin"):
		x := w>>31 == 1
		imm := int64(w >> 10 & 0xFF)
		if name[0] == 's' {
			imm = sext(w>>10&0xFF, 8)
		}
		return " " + a64Reg(rt, x, false) + ", " + a64Reg(rn, x, false) + ", #" + strconv.FormatInt(imm, 10)
	case op.Class == opcodes.ArmDataReg && (name == "smax" || name == "smin" || name == "umax" || name == "umin"):
		x := w>>31 == 1
		return " " + a64Reg(rt, x, false) + ", " + a64Reg(rn, x, false) + ", " + a64Reg(rs, x, false)
	}
	return " .inst 0x" + strconv.FormatUint(uint64(w), 16)
}
