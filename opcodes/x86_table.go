package opcodes

//go:generate go run ./gen -spec spec/x86.spec -o x86_tables.go

// Table is one opcode map: 256 entries indexed by the opcode byte.
type Table [256]Entry

// Entry is what the spec says about one opcode byte.
type Entry struct {
	Op     Op          // the plain form (Mnemonic "" and no flags: not in the spec)
	Group  *[8]Op      // forms selected by ModRM.reg; nil unless a group opcode
	PGroup *[4][8]Op   // group forms selected by mandatory prefix and ModRM.reg
	Pfx    *[4]Op      // forms selected by mandatory prefix: none, 66, F3, F2
	Exact  []ExactForm // forms selected by a whole ModRM byte (register forms)
}

// ExactForm is a form selected by one ModRM byte value and, when Pfx >= 0, a
// mandatory prefix (0 none, 1 66, 2 F3, 3 F2; -1 any).
type ExactForm struct {
	ModRM byte
	Pfx   int8
	Op    Op
}

// set reports whether a table slot holds a form.
func (op *Op) set() bool { return op.Mnemonic != "" || op.Flags != 0 }

// Defined reports whether the spec names this opcode at all.
func (e *Entry) Defined() bool {
	return e.Op.Mnemonic != "" || e.Op.Flags != 0 || e.Pfx != nil
}

// Table selectors for the VEX maps (Legacy maps use the Map constants).
const (
	VEX1 = int(NumMaps) + iota // VEX map 1 (0F)
	VEX2                       // VEX map 2 (0F 38)
	VEX3                       // VEX map 3 (0F 3A)
)

// TableFor returns the table for a legacy/XOP/EVEX map, or for VEX1..VEX3.
func TableFor(i int) *Table {
	if i < 0 || i >= len(tables) {
		return nil
	}
	return tables[i]
}

// Select picks the form for a mandatory prefix index (0 none, 1 66, 2 F3, 3 F2),
// a ModRM byte (valid when hasModRM) and returns it.
func (e *Entry) Select(pfx int, modrm byte, hasModRM bool) *Op {
	if hasModRM {
		var any *Op
		for i := range e.Exact {
			x := &e.Exact[i]
			if x.ModRM != modrm {
				continue
			}
			switch {
			case int(x.Pfx) == pfx:
				return &x.Op
			case x.Pfx < 0:
				any = &x.Op
			}
		}
		if any != nil {
			return any
		}
		// No form for this ModRM byte with this prefix: the group, prefix or
		// plain form decides (0F 01 E8 with 66 falls to /5, undefined).
		reg := (modrm >> 3) & 7
		if e.PGroup != nil && e.PGroup[pfx][reg].set() {
			return &e.PGroup[pfx][reg]
		}
	}
	if e.Pfx != nil && e.Pfx[pfx].set() {
		return &e.Pfx[pfx]
	}
	if hasModRM && e.Group != nil {
		return &e.Group[(modrm>>3)&7]
	}
	return &e.Op
}
