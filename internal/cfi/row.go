package cfi

import "fmt"

// NumRegs is how many DWARF register columns a row tracks (x86-64's 17,
// i386's 9, AArch64's 32 and its pc); rules for higher columns (vector
// registers) are read and dropped: a backtrace does not need them.
const NumRegs = 34

// ruleKind says how a caller's register is recovered.
type ruleKind uint8

const (
	ruleUnset   ruleKind = iota // no rule given: unchanged, as GCC's unwinder takes it
	ruleSame                    // unchanged (DW_CFA_same_value)
	ruleUndef                   // lost (the return address: the outermost frame)
	ruleOffset                  // saved at CFA+off
	ruleValOff                  // is CFA+off
	ruleReg                     // in register reg
	ruleExpr                    // saved at the address expr computes
	ruleValExpr                 // is the value expr computes
	ruleCFAReg                  // (CFA only) reg+off
	ruleCFAExpr                 // (CFA only) expr
)

type rule struct {
	kind ruleKind
	reg  uint64
	off  int64
	expr []byte
}

// row is the frame state at one address.
type row struct {
	cfa    rule
	regs   [NumRegs]rule
	ra     uint64
	signal bool
}

// maxStates bounds DW_CFA_remember_state nesting.
const maxStates = 64

// exec runs a CFA program until the location passes addr.
func (t *Table) exec(r *reader, c *cie, rw *row, init *row, loc *uint64, addr uint64) error {
	var states []row
	set := func(reg uint64, ru rule) {
		if reg < NumRegs {
			rw.regs[reg] = ru
		}
	}
	advance := func(delta uint64) bool {
		*loc += delta * c.codeAlign
		return *loc > addr
	}
	for r.err == nil && r.off < len(r.b) {
		op := r.u8()
		switch op >> 6 {
		case 1: // DW_CFA_advance_loc
			if advance(uint64(op & 0x3f)) {
				return nil
			}
			continue
		case 2: // DW_CFA_offset
			set(uint64(op&0x3f), rule{kind: ruleOffset, off: int64(r.uleb()) * c.dataAlign})
			continue
		case 3: // DW_CFA_restore
			if init != nil && uint64(op&0x3f) < NumRegs {
				rw.regs[op&0x3f] = init.regs[op&0x3f]
			}
			continue
		}
		switch op {
		case 0x00: // nop
		case 0x01: // set_loc
			*loc = r.ptr(c.fdeEnc, t.ptrSize, 0)
			if *loc > addr {
				return r.err
			}
		case 0x02:
			if advance(uint64(r.u8())) {
				return r.err
			}
		case 0x03:
			if advance(uint64(r.u16())) {
				return r.err
			}
		case 0x04:
			if advance(uint64(r.u32())) {
				return r.err
			}
		case 0x05: // offset_extended
			reg := r.uleb()
			set(reg, rule{kind: ruleOffset, off: int64(r.uleb()) * c.dataAlign})
		case 0x06: // restore_extended
			reg := r.uleb()
			if init != nil && reg < NumRegs {
				rw.regs[reg] = init.regs[reg]
			}
		case 0x07: // undefined
			set(r.uleb(), rule{kind: ruleUndef})
		case 0x08: // same_value
			set(r.uleb(), rule{kind: ruleSame})
		case 0x09: // register
			reg := r.uleb()
			set(reg, rule{kind: ruleReg, reg: r.uleb()})
		case 0x0a: // remember_state
			if len(states) == maxStates {
				r.fail("DW_CFA_remember_state nested too deep")
				break
			}
			states = append(states, *rw)
		case 0x0b: // restore_state (the CFA rule too, as DWARF 4 says)
			if len(states) == 0 {
				r.fail("DW_CFA_restore_state without a remembered state")
				break
			}
			*rw = states[len(states)-1]
			states = states[:len(states)-1]
		case 0x0c: // def_cfa
			reg := r.uleb()
			rw.cfa = rule{kind: ruleCFAReg, reg: reg, off: int64(r.uleb())}
		case 0x0d: // def_cfa_register
			rw.cfa.kind, rw.cfa.reg = ruleCFAReg, r.uleb()
		case 0x0e: // def_cfa_offset
			rw.cfa.off = int64(r.uleb())
		case 0x0f: // def_cfa_expression
			rw.cfa = rule{kind: ruleCFAExpr, expr: r.bytes(r.uleb())}
		case 0x10: // expression
			reg := r.uleb()
			set(reg, rule{kind: ruleExpr, expr: r.bytes(r.uleb())})
		case 0x11: // offset_extended_sf
			reg := r.uleb()
			set(reg, rule{kind: ruleOffset, off: r.sleb() * c.dataAlign})
		case 0x12: // def_cfa_sf
			reg := r.uleb()
			rw.cfa = rule{kind: ruleCFAReg, reg: reg, off: r.sleb() * c.dataAlign}
		case 0x13: // def_cfa_offset_sf
			rw.cfa.off = r.sleb() * c.dataAlign
		case 0x14: // val_offset
			reg := r.uleb()
			set(reg, rule{kind: ruleValOff, off: int64(r.uleb()) * c.dataAlign})
		case 0x15: // val_offset_sf
			reg := r.uleb()
			set(reg, rule{kind: ruleValOff, off: r.sleb() * c.dataAlign})
		case 0x16: // val_expression
			reg := r.uleb()
			set(reg, rule{kind: ruleValExpr, expr: r.bytes(r.uleb())})
		case 0x2e: // GNU_args_size
			r.uleb()
		case 0x2f: // GNU_negative_offset_extended
			reg := r.uleb()
			set(reg, rule{kind: ruleOffset, off: -int64(r.uleb()) * c.dataAlign})
		default:
			r.off--
			r.fail(fmt.Sprintf("DW_CFA opcode 0x%02x", op))
		}
	}
	return r.err
}

// rowAt evaluates the row of the FDE covering addr.
func (t *Table) rowAt(addr uint64) (*row, error) {
	if rw := t.rows[addr]; rw != nil {
		return rw, nil
	}
	f, err := t.find(addr)
	if err != nil {
		return nil, err
	}
	c := f.cie
	init := &row{ra: c.ra, signal: c.signal}
	loc := f.begin
	if err := t.exec(t.program(c.insns), c, init, nil, &loc, ^uint64(0)); err != nil {
		return nil, err
	}
	rw := *init
	loc = f.begin
	if err := t.exec(t.program(f.insns), c, &rw, init, &loc, addr); err != nil {
		return nil, err
	}
	if rw.cfa.kind != ruleCFAReg && rw.cfa.kind != ruleCFAExpr {
		return nil, &FormatError{Section: ".eh_frame", What: fmt.Sprintf("no CFA rule at 0x%x", addr)}
	}
	if len(t.rows) >= rowCacheMax {
		clear(t.rows)
	}
	t.rows[addr] = &rw
	return &rw, nil
}

func (t *Table) program(s span) *reader {
	return &reader{sec: ".eh_frame", b: t.frame.Data[:s.end], base: t.frame.Addr, off: s.off}
}
