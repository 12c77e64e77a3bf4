package kernelref

import "math/rand"

// DecoderSample returns 15-byte strings for comparing decoders and policies with
// the kernel: the golden cases' templates, every opcode of the one-byte, 0F,
// 0F 38 and 0F 3A maps after no prefix, 66, F2, F3, 67, F0, 2E (and REX.W in
// 64-bit mode) with seven ModRM/SIB/displacement tails, in 64-bit mode also after
// REX2, an EVEX map-4 and an XOP prefix, and nrand random strings
// biased towards prefix and escape bytes (from seed). All are padded with int3.
func DecoderSample(bits int, seed int64, nrand int) [][]byte {
	var out [][]byte
	pad := func(p []byte) []byte {
		x := make([]byte, 15)
		for i := range x {
			x[i] = 0xCC
		}
		copy(x, p)
		return x
	}
	for _, c := range Cases(bits) {
		r := Row{Insn: c.Template}
		out = append(out, pad(r.Insn))
	}
	prefixes := [][]byte{nil, {0x66}, {0xF2}, {0xF3}, {0x67}, {0xF0}, {0x2E}}
	if bits == 64 {
		prefixes = append(prefixes, []byte{0x48}, []byte{0x66, 0x48})
	}
	maps := [][]byte{nil, {0x0F}, {0x0F, 0x38}, {0x0F, 0x3A}}
	for _, p := range prefixes {
		for _, m := range maps {
			for op := 0; op < 256; op++ {
				for _, tail := range [][]byte{{0x00}, {0x04, 0x24}, {0x05, 1, 2, 3, 4}, {0x44, 0x24, 8}, {0x84, 0x24, 1, 2, 3, 4}, {0xC0}, {0xF8}} {
					out = append(out, pad(cat(p, m, b(byte(op)), tail, b(0x11, 0x22, 0x33, 0x44))))
				}
			}
		}
	}
	if bits == 64 {
		// REX2 map 0, map 1, with W (6.10+ decoders), EVEX map 4 (APX) with W=0
		// and W=1+pp=66, and XOP maps 8, 9, A (6.18+): what 6.1 decodes as AAD,
		// BOUND/EVEX errors and POP.
		for _, p := range [][]byte{nil, {0x66}, {0x67}, {0xF2}} {
			for _, m := range [][]byte{{0xD5, 0x00}, {0xD5, 0x80}, {0xD5, 0x88}, {0x62, 0xF4, 0x7C, 0x08}, {0x62, 0xF4, 0xFD, 0x08},
				{0x8F, 0xE8, 0x78}, {0x8F, 0xE9, 0x78}, {0x8F, 0xEA, 0xF8}} {
				for op := 0; op < 256; op++ {
					for _, tail := range [][]byte{{0x00}, {0x04, 0x24}, {0x05, 1, 2, 3, 4}, {0x44, 0x24, 8}, {0x84, 0x24, 1, 2, 3, 4}, {0xC0}, {0xF8}} {
						out = append(out, pad(cat(p, m, b(byte(op)), tail, b(0x11, 0x22, 0x33, 0x44))))
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(seed))
	hot := []byte{0x0F, 0x66, 0x67, 0xF2, 0xF3, 0xC4, 0xC5, 0x62, 0x8F, 0x38, 0x3A, 0x48, 0x26, 0x2E, 0xD5}
	for i := 0; i < nrand; i++ {
		x := make([]byte, 15)
		for j := range x {
			if rng.Intn(3) == 0 {
				x[j] = hot[rng.Intn(len(hot))]
			} else {
				x[j] = byte(rng.Intn(256))
			}
		}
		out = append(out, x)
	}
	return out
}
