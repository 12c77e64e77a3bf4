package boost

import (
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/opcodes"
)

// Cell is the verdict for one opcode of a map, for `kboost opcodes`.
type Cell struct {
	Opcode byte
	// Kind: "op" (an instruction), "prefix" (a prefix or escape byte in this
	// mode), "invalid" (does not decode).
	Kind     string
	Mnemonic string
	Decision Decision // for the plain form (ModRM.reg = 0 when a ModRM follows)
	// Group: the verdict depends on ModRM.reg; Reg holds the 8 decisions.
	Group  bool
	Reg    [8]Decision
	RegOK  [8]bool   // Reg[i] decoded
	RegMne [8]string // mnemonic per /reg
}

// OpcodeGrid classifies every opcode of map m in mode under the policy with
// GridEnv, decoding as the kernel's decoder does (so an opcode the SDM leaves
// undefined still gets the kernel's verdict): one instruction per opcode with no
// prefixes, a register-form ModRM
// (mod=3, rm=0) unless the opcode requires memory (then mod=0, rm=0), zero
// displacement and immediates. Maps other than one-byte, 0F, 0F 38 and 0F 3A
// give invalid cells.
func (p *Policy) OpcodeGrid(m decode.Map, mode decode.Mode) [256]Cell {
	return p.OpcodeGridEnv(m, mode, p.GridEnv())
}

// OpcodeGridEnv is OpcodeGrid with a caller-chosen Env.
func (p *Policy) OpcodeGridEnv(m decode.Map, mode decode.Mode, env *Env) [256]Cell {
	var g [256]Cell
	var esc []byte
	switch m {
	case decode.MapOne:
	case decode.Map0F:
		esc = []byte{0x0f}
	case decode.Map0F38:
		esc = []byte{0x0f, 0x38}
	case decode.Map0F3A:
		esc = []byte{0x0f, 0x3a}
	default:
		for i := range g {
			g[i] = Cell{Opcode: byte(i), Kind: "invalid"}
		}
		return g
	}
	const addr = 0x1000
	sc := new(scratch)
	for i := 0; i < 256; i++ {
		c := &g[i]
		c.Opcode = byte(i)
		op := byte(i)
		if m == decode.MapOne && gridPrefix(op, mode) {
			c.Kind = "prefix"
			continue
		}
		if m == decode.Map0F && (op == 0x38 || op == 0x3a) {
			c.Kind = "prefix"
			continue
		}
		buf := make([]byte, 0, 16)
		buf = append(buf, esc...)
		buf = append(buf, op)
		modAt := len(buf)
		buf = append(buf, 0xc0)
		for len(buf) < 15 {
			buf = append(buf, 0)
		}
		var k kinsn
		var kin decode.Inst
		err := kdecode(p.kd(), &k, &kin, buf, mode, addr)
		if err == nil && k.in.HasModRM && k.in.Op != nil && k.in.Op.Flags&opcodes.FModMem != 0 {
			buf[modAt] = 0x00
			err = kdecode(p.kd(), &k, &kin, buf, mode, addr)
		}
		if err != nil || k.in.Enc != decode.EncLegacy {
			// Try the memory form before giving up (LES/LDS/BOUND in 32-bit).
			buf[modAt] = 0x00
			err = kdecode(p.kd(), &k, &kin, buf, mode, addr)
			if err != nil || k.in.Enc != decode.EncLegacy {
				c.Kind = "invalid"
				continue
			}
		}
		c.Kind = "op"
		if k.in.Op != nil {
			c.Mnemonic = k.in.Op.Mnemonic
		}
		p.runBytes(sc, &c.Decision, buf, mode, addr, env, false)
		if !k.in.HasModRM {
			continue
		}
		base := buf[modAt]
		for r := 0; r < 8; r++ {
			buf[modAt] = base&0xc7 | byte(r)<<3
			var rk kinsn
			var rin decode.Inst
			if kdecode(p.kd(), &rk, &rin, buf, mode, addr) != nil || rk.in.Enc != decode.EncLegacy {
				continue
			}
			c.RegOK[r] = true
			if rk.in.Op != nil {
				c.RegMne[r] = rk.in.Op.Mnemonic
			}
			p.runBytes(sc, &c.Reg[r], buf, mode, addr, env, false)
		}
		buf[modAt] = base
		for r := 1; r < 8; r++ {
			if c.RegOK[r] != c.RegOK[0] || c.RegMne[r] != c.RegMne[0] ||
				c.Reg[r].Verdict != c.Reg[0].Verdict || c.Reg[r].Errno != c.Reg[0].Errno {
				c.Group = true
			}
		}
	}
	return g
}

// gridPrefix reports bytes that are prefixes or escapes in the one-byte map.
func gridPrefix(op byte, mode decode.Mode) bool {
	if decode.PrefixOf(op) != 0 || op == 0x0f {
		return true
	}
	if mode == decode.Mode64 && (op&0xf0 == 0x40 || op == 0xc4 || op == 0xc5 || op == 0x62) {
		return true
	}
	return false
}
