package boost

import (
	"errors"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/opcodes"
)

// kinsn is an instruction as the kernel's decoder (arch/x86/lib/insn.c) presents
// it to the kprobes and uprobes rules: opcode.bytes[]/nbytes, the ModRM byte, the
// first immediate, the address size, and a Xen/KVM emulate prefix folded into
// the length.
type kinsn struct {
	in     *decode.Inst // the instruction (after any emulate prefix)
	addr   uint64       // address of the first byte (of the emulate prefix if any)
	emu    int          // emulate-prefix bytes (0 or 5)
	length int          // kernel length: emu + in.Len
	op     [3]byte      // opcode.bytes
	nop    int          // opcode.nbytes
	vex    bool         // VEX/EVEX/XOP encoded: the kernel keeps one opcode byte
	rex2   bool         // REX2 (D5) prefixed: likewise, whatever REX2.M says
	modrm  byte
	hasMod bool
	imm    int64 // immediate.value (sign-extended first immediate)
	immLen int
	abytes int // insn->addr_bytes
}

var (
	xenPrefix = [5]byte{0x0f, 0x0b, 0x78, 0x65, 0x6e}
	kvmPrefix = [5]byte{0x0f, 0x0b, 0x6b, 0x76, 0x6d}
)

func hasEmulatePrefix(b []byte) bool {
	if len(b) < 5 {
		return false
	}
	p := [5]byte(b[:5])
	return p == xenPrefix || p == kvmPrefix
}

// inv64 lists one-byte opcodes invalid in 64-bit mode that the kernel decoder
// still decodes there (marked (i64) in x86-opcode-map.txt; it does not enforce
// the flag).
var inv64 = [256]bool{0x06: true, 0x07: true, 0x0e: true, 0x16: true, 0x17: true, 0x1e: true,
	0x1f: true, 0x27: true, 0x2f: true, 0x37: true, 0x3f: true, 0x60: true, 0x61: true,
	0x82: true, 0x9a: true, 0xce: true, 0xd4: true, 0xd5: true, 0xd6: true, 0xea: true}

// kdecode decodes one instruction at b (address addr) the way kernel version
// kd's decoder would, into k, with the instruction itself stored in *dst (k.in
// = dst). b should hold up to 15 bytes.
func kdecode(kd *kdecoder, k *kinsn, dst *decode.Inst, b []byte, mode decode.Mode, addr uint64) error {
	k.in = dst
	if len(b) > 15 {
		b = b[:15]
	}
	k.addr = addr
	k.emu = 0
	if hasEmulatePrefix(b) {
		k.emu = 5
	}
	if kernelOddPrefixes(k.in, b[k.emu:], mode, addr+uint64(k.emu)) {
		k.length = k.emu + k.in.Len
		k.fill()
		return nil
	}
	if kd.rex2 != nil && mode == decode.Mode64 {
		if j := firstNonLegacyPrefix(b[k.emu:]); j >= 0 && b[k.emu+j] == 0xd5 {
			err := kd.decodeREX2(k.in, b[k.emu:], addr+uint64(k.emu), j)
			k.length = k.emu + k.in.Len
			if err != nil {
				return err
			}
			k.fill()
			k.rex2 = true
			return nil
		}
	}
	if done, err := kd.decodeNew(k.in, b[k.emu:], mode, addr+uint64(k.emu)); done {
		k.length = k.emu + k.in.Len
		if err != nil {
			return err
		}
		k.fill()
		return nil
	}
	err := decode.DecodeInto(k.in, b[k.emu:], mode, addr+uint64(k.emu))
	if err != nil && mode == decode.Mode64 && errors.Is(err, decode.ErrInvalid) {
		// The kernel decoder accepts (i64) opcodes in 64-bit mode. Without REX and
		// 67 their length is the same as in 32-bit mode.
		if i := firstNonLegacyPrefix(b[k.emu:]); i >= 0 && inv64[b[k.emu+i]] && !hasPrefix(b[k.emu:k.emu+i], 0x67) {
			var alt decode.Inst
			if decode.DecodeInto(&alt, b[k.emu:], decode.Mode32, addr+uint64(k.emu)) == nil {
				alt.Mode = decode.Mode64
				alt.AddrSize = 64
				*k.in = alt
				err = nil
			}
		}
	}
	if err != nil && errors.Is(err, decode.ErrInvalid) && k.in.Op != nil &&
		k.in.Len > k.in.OpcodeOff {
		// The kernel decoder has no notion of #UD: an opcode slot it knows (or an
		// empty one: no ModRM, no immediate) decodes, whatever the SDM says about
		// that form, mode or mandatory prefix. Package decode reports the full
		// length of such forms; take it.
		err = nil
	}
	err = kd.kernelEscFix(k.in, b[k.emu:], mode, addr+uint64(k.emu), err)
	if err == nil && mode == decode.Mode64 && k.in.Enc == decode.EncLegacy && k.in.Map == decode.MapOne &&
		(k.in.Opcode == 0x9a || k.in.Opcode == 0xea) && k.in.Rex&8 != 0 {
		// __get_immptr(): "ptr16:64 is not exist", the kernel decoder fails.
		err = errPtr64
	}
	k.length = k.emu + k.in.Len
	if err != nil {
		return err
	}
	k.fill()
	return nil
}

var (
	errKernelVEX   = errors.New("the kernel decoder's tables refuse this VEX/EVEX opcode")
	errKernelMustV = errors.New("the kernel decoder refuses this legacy encoding of a VEX-only opcode")
	errKernelTrunc = errors.New("truncated (kernel decoder)")
	errKernelREX2  = errors.New("the kernel decoder refuses this REX2-prefixed opcode")
)

// decodeREX2 is insn_get_prefixes()/insn_get_opcode() of a kernel with REX2
// (6.10+): D5 and its payload at j (after the legacy prefixes) are the REX
// prefix; no VEX may follow; the opcode comes from the one-byte table
// (REX2.M=0) or the 0x0F escape table (M=1), but opcode.bytes keeps only that
// byte (nbytes = 1), and the must-VEX check is skipped. REX2.W sets an 8-byte
// operand (Iv immediates of B8-BF grow to 8 bytes; a 66 prefix no longer
// shortens Iz).
func (kd *kdecoder) decodeREX2(in *decode.Inst, b []byte, addr uint64, j int) error {
	if j+2 >= len(b) || j+2 >= 15 {
		*in = decode.Inst{Mode: decode.Mode64, Addr: addr, Len: min(len(b), 15)}
		return errKernelTrunc
	}
	pl, op := b[j+1], b[j+2]
	m, pid := int(pl>>7), lastPrefixID(b[:j])
	w := pl&8 != 0
	e := kd.rex2Entry(m, pid, op)
	if m == 0 && w {
		e = kd.rex2Entry(0, 0, op) // REX2.W overrides 66: opnd_bytes = 8
		switch {
		case op&0xf8 == 0xb8:
			e = e&^kmImmAllMask | 8<<kmImmAllShift // mov r64, imm64
		case kmImmAll(e) == 6:
			*in = decode.Inst{Mode: decode.Mode64, Addr: addr, Len: j + 3}
			return errPtr64
		}
	}
	if kmImmAll(e) == 8 && hasPrefix(b[:j], 0x67) && op&0xf8 != 0xb8 {
		e = e&^kmImmAllMask | 3<<kmImmShift // moffs with a 4-byte address
	}
	if e&kmLegacyErr != 0 {
		*in = decode.Inst{Mode: decode.Mode64, Addr: addr, Len: j + 3}
		return errKernelREX2
	}
	mp := decode.MapOne
	if m == 1 {
		mp = decode.Map0F
	}
	if err := kernelSynth(in, b, decode.Mode64, addr, mp, op, j+2, e&kmModRM != 0, e); err != nil {
		return err
	}
	in.Op = nil
	in.Map = decode.MapOne // opcode.bytes = {op}, nbytes = 1, whatever the map
	if w {
		in.OpSize = 64
	}
	return nil
}

var errKernelXOP = errors.New("the kernel decoder's XOP tables refuse this opcode")

// decodeNew handles what 7.x decoders read differently from 6.x (done is
// false otherwise): XOP (8F with ModRM.reg != 0, in 32-bit mode only with
// mod 3), and in 64-bit mode the INAT_INV64 opcodes that end the instruction
// at the opcode byte and VEX/EVEX/XOP escapes after a REX (rexNoVEX).
func (kd *kdecoder) decodeNew(in *decode.Inst, b []byte, mode decode.Mode, addr uint64) (done bool, err error) {
	if kd.xop == nil && kd.inv64 == nil {
		return false, nil
	}
	j := firstNonLegacyPrefix(b)
	if j < 0 || j >= 15 {
		return false, nil
	}
	rex := mode == decode.Mode64 && b[j]&0xf0 == 0x40
	if kd.inv64 != nil && mode == decode.Mode64 {
		o := j
		if rex {
			o++
		}
		if o < len(b) && o < 15 && kd.inv64[b[o]] {
			return true, kernelSynth(in, b, mode, addr, decode.MapOne, b[o], o, false, 0)
		}
		if rex && kd.rexNoVEX && o < len(b) && o < 15 {
			switch b[o] {
			case 0xc4, 0xc5, 0x62, 0x8f:
				return true, kernelSynth(in, b, mode, addr, decode.MapOne, b[o], o, true, 0)
			}
		}
	}
	if kd.xop == nil || rex || b[j] != 0x8f || j+1 >= len(b) || b[j+1]&0x38 == 0 ||
		(mode != decode.Mode64 && b[j+1]>>6 != 3) {
		return false, nil
	}
	if j+3 >= len(b) || j+3 >= 15 {
		*in = decode.Inst{Mode: mode, Addr: addr, Len: min(len(b), 15)}
		return true, errKernelTrunc
	}
	m, op := int(b[j+1]&0x1f), b[j+3]
	e := kd.xopEntry(m, op)
	if e&kmModRM != 0 && j+4 < len(b) {
		if e&(1<<(kmVEXShift+int(b[j+4]>>3&7))) == 0 {
			e = 0 // the group's /reg is not an XOP instruction
		}
	}
	if e == 0 {
		*in = decode.Inst{Mode: mode, Addr: addr, Len: j + 4}
		return true, errKernelXOP
	}
	if err := kernelSynth(in, b, mode, addr, decode.MapXOP8+decode.Map(m-8), op, j+3, e&kmModRM != 0, e); err != nil {
		return true, err
	}
	in.Op = nil
	in.Enc, in.EncOff = decode.EncXOP, j
	copy(in.EncBytes[:], b[j:j+3])
	in.VEXW = b[j+2]&0x80 != 0
	return true, nil
}

// lastPrefixID is insn_last_prefix_id() over legacy prefix bytes.
func lastPrefixID(pfx []byte) int {
	if len(pfx) == 0 {
		return 0
	}
	return prefixID(pfx[len(pfx)-1])
}

// prefixID maps the last legacy prefix to its table id: 66, F3, F2 -> 1, 2, 3;
// anything else (or none) -> 0.
func prefixID(last byte) int {
	switch last {
	case 0x66:
		return 1
	case 0xf3:
		return 2
	case 0xf2:
		return 3
	}
	return 0
}

// kernelEscFix applies the kernel decoder's own tables (kernelEscMap) to
// escape-map instructions: a legacy 0F/0F 38/0F 3A opcode may have no ModRM or a
// different immediate in the kernel's map than on the CPU (empty or
// prefix-variant slots), or be refused as VEX-only; a VEX/EVEX opcode the
// kernel's AVX tables lack is refused. in holds package decode's result (ourErr
// its error); the kernel's version replaces it where they differ.
func (kd *kdecoder) kernelEscFix(in *decode.Inst, b []byte, mode decode.Mode, addr uint64, ourErr error) error {
	if in.Enc == decode.EncXOP || (ourErr != nil && in.Op == nil) {
		// The kernel decoder knows no XOP: 8F is Grp1A (POP Ev), ModRM only.
		if j := firstNonLegacyPrefix(b); j >= 0 {
			if mode == decode.Mode64 && b[j]&0xf0 == 0x40 && j+1 < len(b) {
				j++
			}
			if b[j] == 0x8f {
				return kernelSynth(in, b, mode, addr, decode.MapOne, b[j], j, true, 0)
			}
		}
	}
	switch in.Enc {
	case decode.EncVEX2, decode.EncVEX3, decode.EncEVEX:
		// A map package decode does not know (EVEX map 4, VEX map 7: Map
		// stays MapOne) is the kernel's table's to judge.
		unknownMap := ourErr != nil && in.Map == decode.MapOne && in.OpcodeOff > 0 && in.OpcodeOff < len(b)
		if ourErr != nil && in.Op == nil && !unknownMap {
			return ourErr
		}
		e := kd.avxEntry(avxMapNo(in), int(in.VEXpp&3), in.Opcode)
		if e == 0 {
			if ourErr != nil {
				return ourErr
			}
			return errKernelVEX
		}
		if e&kmOpndImm != 0 {
			iz := uint64(3) // 4 bytes
			if avxOpndBytes(in, b, mode, e) == 2 {
				iz = 2
			}
			for r := 0; r < 8; r++ {
				if kmImm(e, r) >= 2 {
					e = e&^(3<<(kmImmShift+2*r)) | iz<<(kmImmShift+2*r)
				}
			}
		}
		hasMod := e&kmModRM != 0
		reg := 0
		if hasMod {
			if in.OpcodeOff+1 >= len(b) {
				return errKernelTrunc
			}
			reg = int(b[in.OpcodeOff+1]>>3) & 7
		}
		shift := kmVEXShift
		if in.Enc == decode.EncEVEX {
			shift = kmEVEXShift
		}
		if e&(1<<(shift+reg)) == 0 {
			return errKernelVEX
		}
		if ourErr == nil && in.HasModRM == hasMod && in.ImmLen+in.Imm2Len == kmImm(e, reg) {
			return nil
		}
		enc, encOff, encBytes, pp, w, l, vvvv := in.Enc, in.EncOff, in.EncBytes, in.VEXpp, in.VEXW, in.VEXL, in.VEXvvvv
		if err := kernelSynth(in, b, mode, addr, in.Map, in.Opcode, in.OpcodeOff, hasMod, e); err != nil {
			return err
		}
		in.Enc, in.EncOff, in.EncBytes, in.VEXpp, in.VEXW, in.VEXL, in.VEXvvvv = enc, encOff, encBytes, pp, w, l, vvvv
		return nil
	case decode.EncLegacy:
	default:
		return ourErr
	}
	// Legacy: redo the kernel's parse of the prefixes to find the escape.
	i, last := 0, byte(0)
	for i < len(b) && i < 15 && prefixOf(b[i]) != 0 {
		last = b[i]
		i++
	}
	if mode == decode.Mode64 && i < len(b) && b[i]&0xf0 == 0x40 {
		i++
	}
	if i+1 >= len(b) || b[i] != 0x0f {
		return ourErr
	}
	m, opOff := 0, i+1
	switch b[i+1] {
	case 0x38:
		m, opOff = 1, i+2
	case 0x3a:
		m, opOff = 2, i+2
	case 0x0f:
		return ourErr // 3DNow!: modrm + suffix byte in both
	}
	if opOff >= len(b) || opOff >= 15 {
		return ourErr
	}
	op := b[opOff]
	if m == 0 && op&0xf0 == 0x80 {
		return ourErr // jcc Jz: operand-size rules as package decode
	}
	e := kd.escEntry(m, prefixID(last), op)
	if e&kmLegacyErr != 0 {
		return errKernelMustV
	}
	modIgnored := in.Op != nil && in.Op.Flags&opcodes.FModIgnored != 0 // mov cr/dr: the kernel decodes mod
	if ourErr == nil && in.HasModRM == (e&kmModRM != 0) && !(modIgnored && in.Mod() != 3) {
		reg := 0
		if in.HasModRM {
			reg = in.Reg()
		}
		if in.ImmLen+in.Imm2Len == kmImm(e, reg) {
			return nil
		}
	}
	return kernelSynth(in, b, mode, addr, []decode.Map{decode.Map0F, decode.Map0F38, decode.Map0F3A}[m], op, opOff, e&kmModRM != 0, e)
}

// avxOpndBytes is insn->opnd_bytes of a VEX/EVEX instruction as the kernel
// decoder leaves it: 4, a legacy 66 prefix makes it 2, REX.W 8, then VEX3.W 8
// or, for EVEX, bit 7 of the fourth prefix byte (insn_get_prefixes tests
// X86_VEX_W on the last byte it read, EVEX.z), and finally an "(es)" opcode with
// pp=66 and EVEX.W=0 makes it 2 (insn_get_opcode).
func avxOpndBytes(in *decode.Inst, b []byte, mode decode.Mode, e uint64) int {
	n := 4
	for _, c := range b[:in.EncOff] {
		switch {
		case c == 0x66:
			n = 2
		case mode == decode.Mode64 && c&0xf8 == 0x48:
			n = 8
		}
	}
	if mode == decode.Mode64 {
		switch in.Enc {
		case decode.EncVEX3:
			if in.VEXW {
				n = 8
			}
		case decode.EncEVEX:
			if in.EncBytes[3]&0x80 != 0 {
				n = 8
			}
		}
	}
	if e&kmScalable != 0 && in.Enc == decode.EncEVEX && !in.VEXW && in.VEXpp == 1 {
		n = 2
	}
	return n
}

// kernelSynth rebuilds *in as the kernel decoder sees it: prefixes (any legacy
// ones, then one REX in 64-bit mode; VEX/EVEX fields are restored by the
// caller), the opcode at opOff in map mp, a ModRM with SIB and displacement by
// the kernel's rules when hasMod, and the kernel's immediate size for ModRM.reg
// from the table entry e (none when e == 0).
func kernelSynth(in *decode.Inst, b []byte, mode decode.Mode, addr uint64, mp decode.Map, op byte, opOff int, hasMod bool, e uint64) error {
	var pfx decode.Prefix
	i, asz := 0, false
	for i < opOff && prefixOf(b[i]) != 0 {
		pfx |= prefixOf(b[i])
		if b[i] == 0x67 {
			// insn_get_prefixes() skips a repeated prefix: a second 67 does not
			// switch the address size back.
			asz = true
		}
		i++
	}
	rex, rexOff := byte(0), 0
	if mode == decode.Mode64 && i < opOff && b[i]&0xf0 == 0x40 {
		rex, rexOff = b[i], i
	}
	abytes := 4
	if mode == decode.Mode64 {
		abytes = 8
		if asz {
			abytes = 4
		}
	} else if asz {
		abytes = 2
	}
	pos := opOff + 1
	reg := 0
	var modrm, sib byte
	hasSIB, modOff, dispOff, dispLen := false, 0, 0, 0
	if hasMod {
		if pos >= len(b) || pos >= 15 {
			return errKernelTrunc
		}
		modrm, modOff = b[pos], pos
		reg = int(modrm>>3) & 7
		pos++
		mod, rm := modrm>>6, modrm&7
		if abytes != 2 && mod != 3 && rm == 4 {
			if pos >= len(b) {
				return errKernelTrunc
			}
			sib, hasSIB = b[pos], true
			pos++
		}
		switch {
		case mod == 3:
		case mod == 1:
			dispLen = 1
		case abytes == 2:
			if (mod == 0 && rm == 6) || mod == 2 {
				dispLen = 2
			}
		case (mod == 0 && rm == 5) || mod == 2 || (mod == 0 && hasSIB && sib&7 == 5):
			dispLen = 4
		}
		dispOff = pos
		pos += dispLen
	}
	immOff, immLen := pos, 0
	if e != 0 {
		immLen = kmImm(e, reg)
	}
	if n := kmImmAll(e); n != 0 {
		immLen = n
	}
	pos += immLen
	if pos > len(b) || pos > 15 {
		return errKernelTrunc
	}
	op0 := in.Op
	*in = decode.Inst{Mode: mode, Addr: addr, Len: pos, Prefixes: pfx, NPrefix: i, Rex: rex, RexOff: rexOff,
		Map: mp, Opcode: op, OpcodeOff: opOff,
		HasModRM: hasMod, ModRM: modrm, ModRMOff: modOff, HasSIB: hasSIB, SIB: sib,
		DispOff: dispOff, DispLen: dispLen, ImmOff: immOff, ImmLen: immLen,
		OpSize: 32, AddrSize: abytes * 8, Op: op0}
	copy(in.Raw[:], b[:pos])
	in.Disp = signExt(b[dispOff : dispOff+dispLen])
	in.Imm = signExt(b[immOff : immOff+immLen])
	in.RIPRel = mode == decode.Mode64 && hasMod && modrm&0xc7 == 0x05
	if mp == decode.MapOne {
		in.Op = nil
	}
	return nil
}

func signExt(b []byte) int64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	switch len(b) {
	case 1:
		return int64(int8(v))
	case 2:
		return int64(int16(v))
	case 4:
		return int64(int32(v))
	}
	return int64(v)
}

var errPtr64 = errors.New("far pointer with REX.W: the kernel decoder has no ptr16:64 form")

// kernelOddPrefixes handles prefix sequences insn_get_prefixes() parses unlike
// the CPU: it keeps at most four distinct legacy prefixes (a fifth distinct one
// is taken as the opcode byte), and in 64-bit mode consumes exactly one REX right
// after the legacy prefixes (a REX or legacy prefix after it is taken as the
// opcode byte). Such an "opcode" has no ModRM or immediate in the kernel's
// tables. It fills in and reports true only for those sequences.
func kernelOddPrefixes(in *decode.Inst, b []byte, mode decode.Mode, addr uint64) bool {
	if len(b) == 0 {
		return false
	}
	if pfxTab[b[0]] == 0 && (mode != decode.Mode64 || b[0]&0xf0 != 0x40 ||
		(len(b) > 1 && pfxTab[b[1]] == 0 && b[1]&0xf0 != 0x40)) {
		return false // the common case: no legacy prefix, at most one REX
	}
	var seen [4]byte
	var pfx decode.Prefix
	i, nb, asz := 0, 0, false
scan:
	for i < len(b) {
		c := b[i]
		p := prefixOf(c)
		if p == 0 {
			break
		}
		for j := 0; j < nb; j++ {
			if seen[j] == c {
				i++
				continue scan
			}
		}
		if nb == 4 {
			break
		}
		seen[nb] = c
		nb++
		pfx |= p
		if c == 0x67 {
			asz = !asz
		}
		i++
	}
	odd := false
	rex := byte(0)
	switch {
	case i >= len(b) || i >= 15:
		return false
	case prefixOf(b[i]) != 0:
		odd = true // a fifth distinct prefix
	case mode == decode.Mode64 && b[i]&0xf0 == 0x40 && i+1 < len(b) && i+1 < 15 &&
		(b[i+1]&0xf0 == 0x40 || prefixOf(b[i+1]) != 0):
		rex = b[i]
		i++
		odd = true
	}
	if !odd {
		return false
	}
	*in = decode.Inst{Mode: mode, Addr: addr, Len: i + 1, Prefixes: pfx, NPrefix: i, Map: decode.MapOne,
		Opcode: b[i], OpcodeOff: i, OpSize: 32, AddrSize: 32}
	copy(in.Raw[:], b[:i+1])
	if rex != 0 {
		in.Rex, in.RexOff = rex, i-1
	}
	if mode == decode.Mode64 {
		in.AddrSize = 64
		if asz {
			in.AddrSize = 32
		}
	} else if asz {
		in.AddrSize = 16
	}
	if pfx&decode.PfxOpSize != 0 {
		in.OpSize = 16
	}
	return true
}

func prefixOf(b byte) decode.Prefix { return pfxTab[b] }

// pfxTab maps a byte to its legacy-prefix bit (decode.PrefixOf, as a table).
var pfxTab = func() (t [256]decode.Prefix) {
	for i := range t {
		t[i] = decode.PrefixOf(byte(i))
	}
	return t
}()

func firstNonLegacyPrefix(b []byte) int {
	for i, c := range b {
		if prefixOf(c) == 0 {
			return i
		}
	}
	return -1
}

func hasPrefix(b []byte, p byte) bool {
	for _, c := range b {
		if c == p {
			return true
		}
	}
	return false
}

// fill derives the kernel's view from the decoded instruction.
func (k *kinsn) fill() {
	in := k.in
	k.vex = in.Enc != decode.EncLegacy
	k.rex2 = false
	k.op = [3]byte{}
	switch {
	case k.vex:
		k.op[0], k.nop = in.Opcode, 1
	default:
		switch in.Map {
		case decode.MapOne:
			k.op[0], k.nop = in.Opcode, 1
		case decode.Map0F:
			k.op[0], k.op[1], k.nop = 0x0f, in.Opcode, 2
		case decode.Map0F38:
			k.op[0], k.op[1], k.op[2], k.nop = 0x0f, 0x38, in.Opcode, 3
		case decode.Map0F3A:
			k.op[0], k.op[1], k.op[2], k.nop = 0x0f, 0x3a, in.Opcode, 3
		case decode.Map3DNow:
			k.op[0], k.op[1], k.nop = 0x0f, 0x0f, 2
		default:
			k.op[0], k.nop = in.Opcode, 1
		}
	}
	k.hasMod, k.modrm = in.HasModRM, in.ModRM
	k.imm, k.immLen = in.Imm, in.ImmLen
	k.abytes = in.AddrSize / 8
}

func (k *kinsn) reg() int { return int(k.modrm>>3) & 7 }
func (k *kinsn) mod() int { return int(k.modrm >> 6) }

// ripRel is insn_rip_relative(): 64-bit, a ModRM with mod=00 rm=101.
func (k *kinsn) ripRel() bool {
	return k.in.Mode == decode.Mode64 && k.hasMod && k.modrm&0xc7 == 0x05
}

// isInt3 is opcode.bytes[0] == 0xCC.
func (k *kinsn) isInt3() bool { return k.op[0] == 0xcc }

// maskingException is insn_masking_exception(): opcode.bytes[0] == 0x1F (the
// kernel's POP_SS_OPCODE is 0x1f, POP DS) or 8E with reg == 2.
func (k *kinsn) maskingException() bool {
	return k.op[0] == 0x1f || (k.op[0] == 0x8e && k.reg() == 2)
}

// relTarget is the target insn_jump_into_range() computes for the opcodes it
// handles (E0-E3 E9 EB 70-7F 0F 80-8F by opcode.bytes): next_byte +
// immediate.value. ok is false for other opcodes.
func (k *kinsn) relTarget() (uint64, bool) {
	o := k.op[0]
	switch {
	case o >= 0xe0 && o <= 0xe3, o == 0xe9, o == 0xeb, o&0xf0 == 0x70:
	case o == 0x0f && k.op[1]&0xf0 == 0x80:
	default:
		return 0, false
	}
	return k.addr + uint64(k.length) + uint64(k.imm), true
}

// isIndirectJump is __insn_is_indirect_jump(): FF /4, FF /5 or EA.
func (k *kinsn) isIndirectJump() bool {
	return (k.op[0] == 0xff && k.reg()&6 == 4) || k.op[0] == 0xea
}

// isException is 6.9's is_exception_insn(): UD0 UD1 UD2, INT3 INT n INTO INT1.
func (k *kinsn) isException() bool {
	if k.op[0] == 0x0f {
		return k.op[1] == 0xff || k.op[1] == 0xb9 || k.op[1] == 0x0b
	}
	switch k.op[0] {
	case 0xcc, 0xcd, 0xce, 0xf1:
		return true
	}
	return false
}

// raw returns the kernel-length bytes starting at the first byte.
func (k *kinsn) raw(dst []byte) int {
	n := 0
	if k.emu > 0 {
		n = copy(dst, xenPrefix[:]) // the exact bytes are not needed: emulate-prefixed insns are rejected
	}
	n += copy(dst[n:], k.in.Bytes())
	return n
}
