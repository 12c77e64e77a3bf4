package decode

import "fmt"

// x86Fields: prefixes, REX or VEX/EVEX/XOP, the opcode with its escape bytes,
// ModRM, SIB, displacement and immediates, then properties.
func (i *Inst) x86Fields() []Field {
	escLen := map[Map]int{Map0F: 1, Map0F38: 2, Map0F3A: 2}[i.Map]
	opStart, pre := i.OpcodeOff, 0
	switch {
	case i.Enc != EncLegacy:
		pre = i.EncOff
	case i.Rex != 0:
		pre = i.RexOff
		opStart -= escLen
	default:
		opStart -= escLen
		pre = opStart
	}
	f := []Field{{Name: "length", Text: fmt.Sprintf("%d bytes", i.Len)}}
	add := func(name, class string, off, n int, format string, a ...any) {
		f = append(f, Field{Name: name, Text: fmt.Sprintf(format, a...), Class: class, Off: off, Len: n})
	}
	if i.Prefixes != 0 {
		add("prefixes", "prefix", 0, pre, "%s", i.Prefixes)
	} else if pre > 0 {
		f = append(f, Field{Name: "prefixes", Class: "prefix", Len: pre})
	}
	if i.Rex != 0 {
		n := 1
		if i.Enc != EncLegacy {
			n = 0 // drawn as part of the encoding
		}
		add("rex", "rex", i.RexOff, n, "%02x at +%d", i.Rex, i.RexOff)
	}
	if i.Enc != EncLegacy {
		add("encoding", "vex", i.EncOff, i.OpcodeOff-i.EncOff, "%s at +%d (L=%d W=%v pp=%d)", i.Enc, i.EncOff, i.VEXL, i.VEXW, i.VEXpp)
	}
	add("opcode", "opcode", opStart, i.OpcodeOff+1-opStart, "map %s, %02x at +%d", i.Map, i.Opcode, i.OpcodeOff)
	if i.HasModRM {
		add("modrm", "modrm", i.ModRMOff, 1, "%02x at +%d (mod=%d reg=%d rm=%d)", i.ModRM, i.ModRMOff, i.Mod(), i.Reg(), i.RM())
	}
	if i.HasSIB {
		add("sib", "sib", i.ModRMOff+1, 1, "%02x", i.SIB)
	}
	if i.DispLen > 0 {
		add("disp", "disp", i.DispOff, i.DispLen, "%#x (%d bytes at +%d)", i.Disp, i.DispLen, i.DispOff)
	}
	if i.ImmLen > 0 {
		add("imm", "imm", i.ImmOff, i.ImmLen, "%#x (%d bytes at +%d)", i.Imm, i.ImmLen, i.ImmOff)
	}
	if i.Imm2Len > 0 {
		add("imm2", "imm", i.ImmOff+i.ImmLen, i.Imm2Len, "%#x (%d bytes)", i.Imm2, i.Imm2Len)
	}
	add("size", "", 0, 0, "operand %d bits, address %d bits", i.OpSize, i.AddrSize)
	if i.RIPRel {
		add("riprel", "", 0, 0, "yes")
	}
	if i.Branch != BranchNone {
		t := i.Branch.String()
		if i.Branch.Relative() {
			t += fmt.Sprintf(" -> %#x", i.Target)
		}
		add("branch", "", 0, 0, "%s", t)
	}
	if i.Privileged {
		add("privileged", "", 0, 0, "yes (#GP at CPL 3)")
	}
	return f
}
