package boost

import "github.com/kboost/kboost/decode"

// A kdecoder is one kernel version's instruction decoder (arch/x86/lib/insn.c
// with the inat tables of its x86-opcode-map.txt) as the probe rules see it:
// tables generated from that version's own decoder (x86_kmap_table.go for 6.1,
// x86_kmap612_table.go for 6.12; TestOracleKernelEscMap regenerates and checks
// them) plus what its code does differently (REX2 from 6.10).
//
// esc holds legacy escape-map encodings, indexed by (map 0F=0/0F38=1/0F3A=2,
// last-prefix id none/66/F3/F2, opcode); avx VEX/EVEX encodings, indexed by
// (map number 1..7 minus 1, pp, opcode); rex2 (nil: the kernel has no REX2)
// REX2-prefixed encodings, indexed by (REX2.M, last-prefix id, opcode); xop
// (nil: no XOP, 8F is POP Ev) AMD XOP encodings, indexed by (map 8/9/A minus
// 8, opcode); inv64 (nil: none) the one-byte opcodes a 64-bit decode stops at
// (INAT_INV64, 6.16+: the instruction is the opcode byte alone); rexNoVEX: a
// REX prefix ends the VEX/EVEX/XOP check (7.x insn_get_prefixes tests the
// REX byte's attribute), so C4 C5 62 8F after it are one-byte opcodes with a
// ModRM (LES LDS BOUND POP).
type kdecoder struct {
	name     string
	esc      *[3 * 4 * 256]uint64
	avx      *[7 * 4 * 256]uint64
	rex2     *[2 * 4 * 256]uint64
	xop      *[3 * 256]uint64
	inv64    *[256]bool
	rexNoVEX bool
}

var (
	kdec61  = &kdecoder{name: "6.1", esc: &kernelEscMap, avx: &kernelAVXMap}
	kdec612 = &kdecoder{name: "6.12", esc: &kernelEscMap612, avx: &kernelAVXMap612, rex2: &kernelREX2Map612}
	kdec72  = &kdecoder{name: "7.2", esc: &kernelEscMap72, avx: &kernelAVXMap72, rex2: &kernelREX2Map72,
		xop: &kernelXOPMap72, inv64: &kernelInv64Map72, rexNoVEX: true}
)

// Entry bits:
const (
	kmLegacyErr = 1 << 0 // legacy encoding refused (-EINVAL: VEX-only opcode); REX2: decode failed
	kmModRM     = 1 << 1 // a ModRM byte follows
	kmImmShift  = 2      // 2 bits per ModRM.reg: immediate bytes 0, 1, 2, 4
	kmVEXShift  = 18     // AVX map: 1 bit per ModRM.reg: VEX encoding accepted
	kmEVEXShift = 26     // AVX map: 1 bit per ModRM.reg: EVEX encoding accepted
	// kmScalable: AVX map: the EVEX form is "(es)" (INAT_EVEX_SCALABLE): with
	// pp=66 and EVEX.W=0 the operand size is 16 bits.
	kmScalable = 1 << 34
	// kmOpndImm: AVX map: the immediate is Iz, 2 or 4 bytes by the operand size
	// the kernel decoder computed (see avxOpndBytes).
	kmOpndImm = 1 << 35
	// REX2 map 0: the immediates' total size when ModRM.reg does not decide it
	// and it is not 0, 1, 2 or 4 bytes (moffs64: 8, 4 with a 67 prefix; far
	// pointer: 6; enter: 3).
	kmImmAllShift = 36
	kmImmAllMask  = 15 << kmImmAllShift
)

func kmImmAll(e uint64) int { return int(e>>kmImmAllShift) & 15 }

func (kd *kdecoder) escEntry(m, pfx int, op byte) uint64 { return kd.esc[(m*4+pfx)*256+int(op)] }

// avxEntry: mapNo is the VEX/EVEX map number (1..7); 0 when out of range.
func (kd *kdecoder) avxEntry(mapNo, pp int, op byte) uint64 {
	if mapNo < 1 || mapNo > 7 {
		return 0
	}
	return kd.avx[((mapNo-1)*4+pp)*256+int(op)]
}

// xopEntry: m is XOP.mmmmm; 0 outside maps 8-A.
func (kd *kdecoder) xopEntry(m int, op byte) uint64 {
	if m < 8 || m > 10 {
		return 0
	}
	return kd.xop[(m-8)*256+int(op)]
}

func (kd *kdecoder) rex2Entry(m, pfx int, op byte) uint64 { return kd.rex2[(m*4+pfx)*256+int(op)] }

// avxMapNo is the map number the kernel reads from a VEX3/EVEX prefix
// (insn_vex_m_bits: 5 bits of VEX3, 3 bits of EVEX; VEX2 is map 1).
func avxMapNo(in *decode.Inst) int {
	switch in.Enc {
	case decode.EncVEX2:
		return 1
	case decode.EncVEX3:
		return int(in.EncBytes[1] & 0x1f)
	case decode.EncEVEX:
		return int(in.EncBytes[1] & 7)
	}
	return 0
}

func kmImm(e uint64, reg int) int {
	return [4]int{0, 1, 2, 4}[(e>>(kmImmShift+2*reg))&3]
}
