package boost

import "github.com/kboost/kboost/decode"

// kmap_table.go, generated from the kernel's own decoder, records what the 6.1
// kernel decoder's attribute tables say about each opcode of the escape maps.
//
// kernelEscMap, legacy encodings, indexed by (map 0F=0/0F38=1/0F3A=2,
// last-prefix id none/66/F3/F2, opcode); kernelAVXMap, VEX/EVEX encodings,
// indexed by (map 0F=0/0F38=1/0F3A=2/map5=3/map6=4, pp, opcode). Entry bits:
const (
	kmLegacyErr = 1 << 0 // legacy encoding refused (-EINVAL: VEX-only opcode)
	kmModRM     = 1 << 1 // a ModRM byte follows
	kmImmShift  = 2      // 2 bits per ModRM.reg: immediate bytes 0, 1, 2, 4
	kmVEXShift  = 18     // AVX map: 1 bit per ModRM.reg: VEX encoding accepted
	kmEVEXShift = 26     // AVX map: 1 bit per ModRM.reg: EVEX encoding accepted
)

func kmEntry(m, pfx int, op byte) uint64 { return kernelEscMap[(m*4+pfx)*256+int(op)] }

func kmAVXEntry(m, pp int, op byte) uint64 { return kernelAVXMap[(m*4+pp)*256+int(op)] }

// avxMapIndex maps an opcode map to kernelAVXMap's first index (-1: the kernel
// has no table for it).
func avxMapIndex(m decode.Map) int {
	switch m {
	case decode.Map0F:
		return 0
	case decode.Map0F38:
		return 1
	case decode.Map0F3A:
		return 2
	case decode.MapEVEX5:
		return 3
	case decode.MapEVEX6:
		return 4
	}
	return -1
}

func kmImm(e uint64, reg int) int {
	return [4]int{0, 1, 2, 4}[(e>>(kmImmShift+2*reg))&3]
}
