package decode

import "github.com/kboost/kboost/opcodes"

// X86_64 is the x86-64 (long mode) instruction set.
var X86_64 = &Arch{
	Name: "x86-64", Mode: Mode64, MaxInsnLen: 15, InsnAlign: 1, PtrSize: 8, ObjdumpArg: "i386:x86-64",
	TextAddr: 0xffffffff81000000, SlotAddr: 0xffffffffa0000000,
	Decode: func(inst *Inst, b []byte, addr uint64) error { return DecodeInto(inst, b, Mode64, addr) },
	Format: formatX86,
}

// I386 is the i386 (32-bit protected mode) instruction set.
var I386 = &Arch{
	Name: "i386", Mode: Mode32, MaxInsnLen: 15, InsnAlign: 1, PtrSize: 4, ObjdumpArg: "i386",
	TextAddr: 0xc1000000, SlotAddr: 0xf8000000,
	Decode: func(inst *Inst, b []byte, addr uint64) error { return DecodeInto(inst, b, Mode32, addr) },
	Format: formatX86,
}

// maxLen is the architectural limit of an x86 instruction, in bytes.
const maxLen = 15

// prefixTable maps a byte to its legacy Prefix bit (0 if not a legacy prefix).
var prefixTable = func() (t [256]Prefix) {
	for i, b := range prefixBytes {
		t[b] = 1 << i
	}
	return t
}()

// decoder carries the cursor of one decode.
type decoder struct {
	b      []byte // input, at most maxLen bytes
	i      int    // next byte
	inst   *Inst
	vendor Vendor
}

func (d *decoder) fail(err error, why string) error {
	n := d.i
	if n < 1 && len(d.b) > 0 {
		n = 1
	}
	if n > maxLen {
		n = maxLen
	}
	d.inst.Len = n
	return &DecodeError{Addr: d.inst.Addr, Len: n, Err: err, Why: why}
}

// need makes sure k more bytes are available.
func (d *decoder) need(k int) error {
	if d.i+k > len(d.b) {
		if d.i+k > maxLen {
			d.i = maxLen
			return d.fail(ErrTooLong, "")
		}
		d.i = len(d.b)
		return d.fail(ErrTruncated, "")
	}
	return nil
}

// DecodeInto is Decode writing into inst, without allocating. It follows Intel's
// rules where vendors differ, as the Linux kernel's decoder does.
func DecodeInto(inst *Inst, b []byte, mode Mode, addr uint64) error {
	return DecodeVendor(inst, b, mode, addr, VendorIntel)
}

// DecodeVendor is DecodeInto with the vendor's rules where Intel and AMD CPUs
// decode differently.
func DecodeVendor(inst *Inst, b []byte, mode Mode, addr uint64, v Vendor) error {
	*inst = Inst{Mode: mode, Addr: addr}
	if len(b) > maxLen {
		b = b[:maxLen]
	}
	copy(inst.Raw[:], b)
	d := decoder{b: b, inst: inst, vendor: v}
	if mode != Mode32 && mode != Mode64 {
		if dec := otherDecoder(mode); dec != nil {
			return dec(inst, b, addr) // A64, A32, T32: see modeDecoders
		}
		return d.fail(ErrMode, mode.String())
	}
	if len(b) == 0 {
		return &DecodeError{Addr: addr, Err: ErrTruncated}
	}
	err := d.decode()
	if err == nil {
		inst.Len = d.i
	}
	return err
}

func (d *decoder) decode() error {
	inst := d.inst
	b := d.b
	mode64 := inst.Mode == Mode64

	// Legacy prefixes and REX. A REX byte counts only when it immediately
	// precedes the opcode; an earlier one is ignored (but still part of the
	// instruction).
	for {
		if d.i >= len(b) {
			return d.need(1)
		}
		c := b[d.i]
		if p := prefixTable[c]; p != 0 {
			inst.Prefixes |= p
			inst.NPrefix++
			if c == 0xF2 || c == 0xF3 {
				inst.LastRep = c
			}
			inst.Rex = 0
			d.i++
			continue
		}
		if mode64 && c&0xF0 == 0x40 {
			inst.Rex = c
			inst.RexOff = d.i
			d.i++
			continue
		}
		break
	}

	inst.OpSize, inst.AddrSize = 32, 32
	if mode64 {
		inst.AddrSize = 64
	}
	if inst.Prefixes&PfxAddr != 0 {
		inst.AddrSize /= 2
	}
	pfx := 0 // mandatory prefix index: none, 66, F3, F2
	if inst.Prefixes&PfxOpSize != 0 {
		pfx = 1
	}
	switch inst.LastRep {
	case 0xF3:
		pfx = 2
	case 0xF2:
		pfx = 3
	}

	var tbl *opcodes.Table
	c := b[d.i]
	switch {
	case c == 0x0F:
		if err := d.need(2); err != nil {
			return err
		}
		switch b[d.i+1] {
		case 0x38, 0x3A:
			if err := d.need(3); err != nil {
				return err
			}
			inst.Map = Map0F38
			if b[d.i+1] == 0x3A {
				inst.Map = Map0F3A
			}
			d.i += 2
		case 0x0F:
			return d.decode3DNow()
		default:
			inst.Map = Map0F
			d.i++
		}
		tbl = opcodes.TableFor(int(inst.Map))
	case c == 0xC4 || c == 0xC5 || c == 0x62:
		if !mode64 {
			// LES/LDS/BOUND need a memory operand: mod=11 means VEX/EVEX.
			if err := d.need(2); err != nil {
				return err
			}
			if b[d.i+1]&0xC0 != 0xC0 {
				tbl = opcodes.TableFor(int(MapOne))
				break
			}
		}
		return d.decodeVEX(c)
	case c == 0x8F:
		if err := d.need(2); err != nil {
			return err
		}
		if b[d.i+1]&0x1F >= 8 {
			return d.decodeVEX(c)
		}
		tbl = opcodes.TableFor(int(MapOne))
	default:
		tbl = opcodes.TableFor(int(MapOne))
	}

	inst.Opcode = b[d.i]
	inst.OpcodeOff = d.i
	d.i++
	e := &tbl[inst.Opcode]
	op := &e.Op
	if e.Pfx != nil && e.Pfx[pfx].Mnemonic != "" {
		op = &e.Pfx[pfx]
	}
	inst.Op = op
	// Every 0F 38 / 0F 3A opcode, defined or not, has a ModRM byte.
	hasModRM := op.Flags&opcodes.FModRM != 0 || inst.Map == Map0F38 || inst.Map == Map0F3A

	// Operand size.
	switch {
	case mode64 && op.Flags&opcodes.FForce64 != 0 && d.vendor == VendorIntel:
		inst.OpSize = 64
	case mode64 && inst.Rex&0x08 != 0:
		inst.OpSize = 64
	case inst.Prefixes&PfxOpSize != 0:
		inst.OpSize = 16
	case mode64 && op.Flags&(opcodes.FDef64|opcodes.FForce64) != 0:
		inst.OpSize = 64
	}

	if hasModRM {
		if err := d.modrm(op.Flags&opcodes.FModIgnored != 0); err != nil {
			return err
		}
		op = e.Select(pfx, inst.ModRM, true)
		inst.Op = op
	}

	imm := op.Imm
	if inst.Map == Map0F3A {
		imm = opcodes.ImmB // every 0F 3A opcode has an 8-bit immediate
	}
	if err := d.immediate(imm); err != nil {
		return err
	}
	inst.Branch = op.Branch
	d.branchTarget()
	return d.validate(e, op)
}

// validate reports encodings the CPU rejects with #UD. The length is known by now.
func (d *decoder) validate(e *opcodes.Entry, op *opcodes.Op) error {
	inst := d.inst
	d.inst.Len = d.i
	switch {
	case !e.Defined():
		return d.invalid("opcode not defined")
	case op.Mnemonic == "" && op.Flags == 0:
		return d.invalid("opcode not defined with this mandatory prefix")
	case op.Flags&opcodes.FInvalid != 0:
		return d.invalid("undefined form")
	case op.Flags&opcodes.FInv64 != 0 && inst.Mode == Mode64:
		inst.Invalid64 = true
		return d.invalid("invalid in 64-bit mode")
	case op.Flags&opcodes.FOnly64 != 0 && inst.Mode != Mode64:
		return d.invalid("valid only in 64-bit mode")
	case op.Flags&opcodes.FModMem != 0 && inst.HasModRM && inst.Mod() == 3:
		return d.invalid("needs a memory operand")
	case op.Flags&opcodes.FModReg != 0 && inst.HasModRM && inst.Mod() != 3:
		return d.invalid("needs a register operand")
	}
	if op.Flags&opcodes.FInv64 != 0 {
		inst.Invalid64 = true
	}
	inst.Privileged = op.Flags&opcodes.FPriv != 0
	return nil
}

func (d *decoder) invalid(why string) error {
	return &DecodeError{Addr: d.inst.Addr, Len: d.inst.Len, Err: ErrInvalid, Why: why}
}

// modrm reads ModRM, SIB and displacement. regOnly: mod is ignored (mov cr/dr).
func (d *decoder) modrm(regOnly bool) error {
	inst := d.inst
	if err := d.need(1); err != nil {
		return err
	}
	inst.HasModRM = true
	inst.ModRM = d.b[d.i]
	inst.ModRMOff = d.i
	d.i++
	mod, rm := inst.ModRM>>6, inst.ModRM&7
	if mod == 3 || regOnly {
		return nil
	}
	disp := 0
	if inst.AddrSize == 16 {
		switch {
		case mod == 0 && rm == 6:
			disp = 2
		case mod == 1:
			disp = 1
		case mod == 2:
			disp = 2
		}
	} else {
		if rm == 4 {
			if err := d.need(1); err != nil {
				return err
			}
			inst.HasSIB = true
			inst.SIB = d.b[d.i]
			d.i++
			if mod == 0 && inst.SIB&7 == 5 {
				disp = 4
			}
		} else if mod == 0 && rm == 5 {
			disp = 4
			inst.RIPRel = inst.Mode == Mode64
		}
		switch mod {
		case 1:
			disp = 1
		case 2:
			disp = 4
		}
	}
	if disp == 0 {
		return nil
	}
	if err := d.need(disp); err != nil {
		return err
	}
	inst.DispOff, inst.DispLen = d.i, disp
	inst.Disp = readSigned(d.b[d.i:], disp)
	d.i += disp
	return nil
}

func readSigned(b []byte, n int) int64 {
	switch n {
	case 1:
		return int64(int8(b[0]))
	case 2:
		return int64(int16(uint16(b[0]) | uint16(b[1])<<8))
	case 4:
		return int64(int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24))
	case 8:
		var v uint64
		for k := 7; k >= 0; k-- {
			v = v<<8 | uint64(b[k])
		}
		return int64(v)
	}
	return 0
}

func readUnsigned(b []byte, n int) int64 {
	v := readSigned(b, n)
	if n < 8 {
		v &= 1<<(8*n) - 1
	}
	return v
}

// immediate reads the immediate bytes of kind k.
func (d *decoder) immediate(k opcodes.ImmKind) error {
	inst := d.inst
	n1, n2 := 0, 0
	switch k {
	case opcodes.ImmNone:
		return nil
	case opcodes.ImmB:
		n1 = 1
	case opcodes.ImmW:
		n1 = 2
	case opcodes.ImmZ:
		n1 = 4
		if inst.OpSize == 16 {
			n1 = 2
		}
	case opcodes.ImmV:
		n1 = inst.OpSize / 8
	case opcodes.ImmD:
		n1 = 4
	case opcodes.ImmWB:
		n1, n2 = 2, 1
	case opcodes.ImmAp:
		n1, n2 = 4, 2
		if inst.OpSize == 16 {
			n1 = 2
		}
	case opcodes.ImmMoffs:
		if err := d.need(inst.AddrSize / 8); err != nil {
			return err
		}
		// A memory offset is an address: report it as a displacement.
		inst.DispOff, inst.DispLen = d.i, inst.AddrSize/8
		inst.Disp = readUnsigned(d.b[d.i:], inst.DispLen)
		d.i += inst.DispLen
		return nil
	case opcodes.ImmBB:
		n1, n2 = 1, 1
	}
	if err := d.need(n1 + n2); err != nil {
		return err
	}
	inst.ImmOff, inst.ImmLen = d.i, n1
	inst.Imm = readSigned(d.b[d.i:], n1)
	d.i += n1
	if n2 > 0 {
		inst.Imm2Len = n2
		inst.Imm2 = readUnsigned(d.b[d.i:], n2)
		d.i += n2
	}
	return nil
}

// branchTarget computes the absolute target of a relative branch.
func (d *decoder) branchTarget() {
	inst := d.inst
	if !inst.Branch.Relative() || inst.ImmLen == 0 {
		return
	}
	t := inst.Addr + uint64(d.i) + uint64(inst.Imm)
	switch {
	case inst.OpSize == 16:
		t &= 0xFFFF
	case inst.Mode == Mode32:
		t &= 0xFFFFFFFF
	}
	inst.Target = t
}

// decode3DNow decodes 0F 0F ModRM [SIB] [disp] suffix.
func (d *decoder) decode3DNow() error {
	inst := d.inst
	inst.Map = Map3DNow
	inst.OpcodeOff = d.i + 1
	d.i += 2
	if err := d.modrm(false); err != nil {
		return err
	}
	if err := d.need(1); err != nil {
		return err
	}
	inst.Opcode = d.b[d.i]
	d.i++
	e := &opcodes.TableFor(int(Map3DNow))[inst.Opcode]
	inst.Op = &e.Op
	return d.validate(e, &e.Op)
}

// decodeVEX decodes VEX (C4, C5), EVEX (62) and XOP (8F) instructions.
func (d *decoder) decodeVEX(esc byte) error {
	inst := d.inst
	inst.EncOff = d.i
	var size int
	switch esc {
	case 0xC5:
		inst.Enc, size = EncVEX2, 2
	case 0xC4:
		inst.Enc, size = EncVEX3, 3
	case 0x62:
		inst.Enc, size = EncEVEX, 4
	default:
		inst.Enc, size = EncXOP, 3
	}
	if err := d.need(size + 1); err != nil {
		return err
	}
	copy(inst.EncBytes[:], d.b[d.i:d.i+size])
	p := d.b[d.i:]
	var mmmmm byte
	var pp, vvvv byte
	switch inst.Enc {
	case EncVEX2:
		mmmmm = 1
		inst.VEXL = p[1] >> 2 & 1
		pp, vvvv = p[1]&3, p[1]>>3&15
	case EncVEX3, EncXOP:
		mmmmm = p[1] & 0x1F
		inst.VEXW = p[2]&0x80 != 0
		inst.VEXL = p[2] >> 2 & 1
		pp, vvvv = p[2]&3, p[2]>>3&15
	case EncEVEX:
		mmmmm = p[1] & 7
		inst.VEXW = p[2]&0x80 != 0
		inst.VEXL = p[3] >> 5 & 3
		pp, vvvv = p[2]&3, p[2]>>3&15
	}
	inst.VEXpp = pp
	inst.VEXvvvv = ^vvvv & 15
	d.i += size
	inst.Opcode = d.b[d.i]
	inst.OpcodeOff = d.i
	d.i++

	// The table gives validity and names; the length follows from the map.
	tblIdx, immKind, modrm := -1, opcodes.ImmNone, true
	switch inst.Enc {
	case EncXOP:
		switch mmmmm {
		case 8:
			inst.Map, tblIdx, immKind = MapXOP8, int(MapXOP8), opcodes.ImmB
		case 9:
			inst.Map, tblIdx = MapXOP9, int(MapXOP9)
		case 10:
			inst.Map, tblIdx, immKind = MapXOPA, int(MapXOPA), opcodes.ImmD
		}
	case EncEVEX:
		switch mmmmm {
		case 1, 2, 3:
			inst.Map = Map(mmmmm)
		case 5:
			inst.Map, tblIdx = MapEVEX5, int(MapEVEX5)
		case 6:
			inst.Map, tblIdx = MapEVEX6, int(MapEVEX6)
		}
	default:
		switch mmmmm {
		case 1, 2, 3:
			inst.Map = Map(mmmmm)
			tblIdx = opcodes.VEX1 + int(mmmmm) - 1
		}
	}
	switch inst.Map {
	case Map0F:
		switch inst.Opcode {
		case 0x70, 0x71, 0x72, 0x73, 0xC2, 0xC4, 0xC5, 0xC6:
			immKind = opcodes.ImmB
		case 0x77:
			modrm = inst.Enc == EncEVEX
		}
	case Map0F3A:
		immKind = opcodes.ImmB
	}
	if inst.Map == MapOne {
		// Reserved map select: the CPU raises #UD; the rest of the encoding is unknown.
		inst.Len = d.i
		return d.invalid("reserved VEX/EVEX/XOP map")
	}
	inst.OpSize = 32
	if inst.VEXW && (inst.Mode == Mode64) {
		inst.OpSize = 64
	}
	if modrm {
		if err := d.modrm(false); err != nil {
			return err
		}
	}
	if err := d.immediate(immKind); err != nil {
		return err
	}
	inst.Len = d.i
	defined := true
	if tblIdx >= 0 {
		e := &opcodes.TableFor(tblIdx)[inst.Opcode]
		inst.Op = e.Select(int(pp), inst.ModRM, inst.HasModRM)
		defined = e.Defined()
	} else if inst.Enc == EncEVEX && inst.Map <= Map0F3A {
		// EVEX maps 1-3 hold many opcodes VEX lacks: names come from the VEX
		// table where it has them; validity is not judged here.
		inst.Op = opcodes.TableFor(opcodes.VEX1 + int(inst.Map) - 1)[inst.Opcode].Select(int(pp), inst.ModRM, inst.HasModRM)
	}
	if inst.Prefixes&(PfxOpSize|PfxRep|PfxRepNE|PfxLock) != 0 || inst.Rex != 0 {
		return d.invalid("VEX/EVEX/XOP with a 66/F2/F3/F0/REX prefix")
	}
	if !defined {
		return d.invalid("opcode not defined in this map")
	}
	return nil
}
