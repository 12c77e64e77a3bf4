package decode

import (
	"strconv"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// Format renders inst as GNU objdump does, with the renderer of inst's
// architecture (Arch.Format): for x86 AT&T syntax via golang.org/x/arch/x86/x86asm,
// for A64 via golang.org/x/arch/arm64/arm64asm (see formatA64). symname, if not
// nil, names branch targets and addresses. When the x/arch package cannot decode
// the bytes (instructions it does not know, or lengths it gets wrong) the result
// is kboost's own fallback: the opcode-table mnemonic (with raw operands for
// ARM), or "(bad)".
func Format(inst *Inst, symname func(uint64) (string, uint64)) string {
	for _, a := range Arches {
		if a.Mode == inst.Mode && a.Format != nil {
			return a.Format(inst, symname)
		}
	}
	return "(bad)"
}

// formatX86 is Format for Mode32 and Mode64.
func formatX86(inst *Inst, symname func(uint64) (string, uint64)) string {
	if inst.Len == 0 {
		return "(bad)"
	}
	mode := 64
	if inst.Mode == Mode32 {
		mode = 32
	}
	if t, ok := special(inst); ok {
		return t
	}
	xi, err := x86asm.Decode(inst.Bytes(), mode)
	if err == nil && xi.Len == inst.Len {
		return x86asm.GNUSyntax(xi, inst.Addr, x86asm.SymLookup(symname))
	}
	return fallbackText(inst)
}

// special names instructions x86asm renders as something else: CET's endbr64 and
// endbr32 (F3 0F 1E FA/FB) are hint nops to x86asm, but kernel readers look for them.
func special(inst *Inst) (string, bool) {
	if inst.Map == Map0F && inst.Opcode == 0x1E && inst.LastRep == 0xF3 && inst.Enc == EncLegacy {
		switch inst.ModRM {
		case 0xFA:
			return "endbr64", true
		case 0xFB:
			return "endbr32", true
		}
	}
	return "", false
}

func fallbackText(inst *Inst) string {
	if inst.Op == nil || inst.Op.Mnemonic == "" {
		return "(bad)"
	}
	s := ""
	if inst.Prefixes&PfxLock != 0 {
		s = "lock "
	}
	switch inst.Enc {
	case EncVEX2, EncVEX3, EncEVEX, EncXOP:
		if inst.Op.Mnemonic[0] != 'v' && inst.Enc != EncXOP {
			return s + "{" + inst.Enc.String() + "} " + inst.Op.Mnemonic
		}
	}
	return s + inst.Op.Mnemonic
}

// Formatter renders instructions like Format, memoizing the text of byte strings
// it has seen: kernel text repeats most instructions many times, and x86asm's
// decode+print costs about a microsecond. Relative branches are memoized without
// their displacement and get their target appended. A Formatter is not safe for
// concurrent use; give each goroutine its own.
type Formatter struct {
	cache map[string]string
	max   int
	buf   [15]byte
}

// NewFormatter returns a Formatter holding at most max memoized texts (0: 1<<20).
func NewFormatter(max int) *Formatter {
	if max <= 0 {
		max = 1 << 14
	}
	return &Formatter{cache: make(map[string]string, 1024), max: max}
}

// Format renders inst; see the package function Format (without symbols).
func (f *Formatter) Format(inst *Inst) string {
	if inst.Len == 0 {
		return "(bad)"
	}
	if inst.ArmOp != nil && (inst.PCRel || inst.Branch.Relative()) {
		// ARM: the target is not in a byte-aligned immediate; the word alone
		// does not determine the text.
		return Format(inst, nil)
	}
	rel := inst.Branch.Relative() && inst.ImmLen > 0
	key := inst.Bytes()
	if rel {
		copy(f.buf[:], key)
		for k := 0; k < inst.ImmLen; k++ {
			f.buf[inst.ImmOff+k] = 0
		}
		key = f.buf[:inst.Len]
	}
	s, ok := f.cache[string(key)]
	if !ok {
		s = Format(inst, nil)
		if rel {
			if i := strings.LastIndexByte(s, ' '); i >= 0 && strings.HasPrefix(s[i+1:], "0x") {
				s = s[:i+1]
			} else {
				// x86asm rendered it differently (or not at all): do not memoize.
				return s
			}
		}
		if len(f.cache) >= f.max {
			clear(f.cache)
		}
		f.cache[string(key)] = s
	}
	if rel {
		return s + "0x" + strconv.FormatUint(inst.Target, 16)
	}
	return s
}
