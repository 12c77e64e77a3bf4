package uprobe

import (
	"github.com/kboost/kboost/decode"
)

// RedZoneUse is the first access below %rsp a function makes.
type RedZoneUse struct {
	Off uint64 `json:"off"`
	Asm string `json:"asm"`
}

// redZoneUse follows %rsp through a linear sweep of a function (push, pop,
// sub/add of an immediate, %rbp set from %rsp) and returns the first memory
// access below the current %rsp: data kept in the System V red zone. A leaf
// function does this without lowering %rsp. Only 64-bit code has a red zone.
func redZoneUse(insts []decode.Inst, mode decode.Mode) *RedZoneUse {
	if mode != decode.Mode64 || len(insts) == 0 {
		return nil
	}
	base := insts[0].Addr
	depth := int64(0)      // bytes %rsp is below its value at entry
	rbp := int64(-1 << 62) // depth %rbp points at; unknown
	for i := range insts {
		in := &insts[i]
		if in.Len == 0 || in.Op == nil {
			continue
		}
		if in.HasModRM && in.Mod() != 3 && !(in.Map == decode.MapOne && in.Opcode == 0x8D) && !isHintNop(in) {
			if b, ok := memBase(in); ok {
				switch {
				case b == 4 && in.Disp < 0:
					return &RedZoneUse{Off: in.Addr - base, Asm: decode.Format(in, nil)}
				case b == 5 && rbp != -1<<62 && rbp-in.Disp > depth:
					return &RedZoneUse{Off: in.Addr - base, Asm: decode.Format(in, nil)}
				}
			}
		}
		rexW := in.Rex&8 != 0
		switch {
		case in.Enc != decode.EncLegacy:
		case in.Map == decode.MapOne && in.Opcode >= 0x50 && in.Opcode <= 0x57,
			in.Map == decode.MapOne && (in.Opcode == 0x6A || in.Opcode == 0x68),
			in.Map == decode.MapOne && in.Opcode == 0xFF && in.HasModRM && in.Reg() == 6:
			depth += 8
		case in.Map == decode.MapOne && in.Opcode >= 0x58 && in.Opcode <= 0x5F:
			depth -= 8
			if in.Opcode == 0x5D && in.Rex&1 == 0 {
				rbp = -1 << 62
			}
		case in.Map == decode.MapOne && (in.Opcode == 0x83 || in.Opcode == 0x81) && rexW && in.Mod() == 3 && in.RM() == 4 && in.Rex&1 == 0:
			switch in.Reg() {
			case 5: // sub
				depth += in.Imm
			case 0: // add
				depth -= in.Imm
			}
		case in.Map == decode.MapOne && in.Opcode == 0x89 && rexW && in.Mod() == 3 && in.Reg() == 4 && in.RM() == 5 && in.Rex&5 == 0:
			rbp = depth // mov %rsp,%rbp
		case in.Map == decode.MapOne && in.Opcode == 0x8B && rexW && in.Mod() == 3 && in.Reg() == 5 && in.RM() == 4 && in.Rex&5 == 0:
			rbp = depth // mov %rsp,%rbp (8b form)
		}
	}
	return nil
}

// memBase returns the base register number (0-15) of a ModRM memory operand;
// false for RIP-relative and absolute operands.
func memBase(in *decode.Inst) (int, bool) {
	if in.RIPRel || in.AddrSize != 64 {
		return 0, false
	}
	rm := in.RM()
	b := rm
	if rm == 4 && in.HasSIB {
		b = int(in.SIB & 7)
		if b == 5 && in.Mod() == 0 {
			return 0, false
		}
	} else if rm == 5 && in.Mod() == 0 {
		return 0, false
	}
	if in.Rex&1 != 0 {
		b += 8
	}
	return b, true
}
