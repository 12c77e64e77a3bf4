package fuzz

import (
	"debug/elf"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/x86gen"
	"github.com/kboost/kboost/kimage"
)

// FuzzSource is the case mix of `kboost fuzz` (and of the throughput
// benchmark): half structured candidates from x86gen (prefixes x opcode maps
// x ModRM/SIB x displacement x immediate), half real instructions, as they
// are or mutated (a bit flipped, a byte replaced, a legacy prefix added, the
// bytes after the opcode randomized, the first byte dropped, random bytes
// appended).
type FuzzSource struct {
	genRand
	g       *x86gen.Gen
	samples [][]byte
}

// NewFuzzSource returns the mix for a mode; samples are the real
// instructions to mutate (SampleKernelInsts), none means structured only.
func NewSource(m decode.Mode, seed uint64, samples [][]byte) *FuzzSource {
	bits := 64
	if m == decode.Mode32 {
		bits = 32
	}
	return &FuzzSource{g: x86gen.New(x86gen.Config{Seed: seed, Bits: bits}), genRand: newGenRand(seed, 0x6d757461), samples: samples}
}

// Seed restarts the mix (and its structured generator) from s.
func (c *FuzzSource) Seed(s uint64) {
	c.genRand.Seed(s)
	c.g.Seed(s)
}

// Next appends one candidate (at most 15 bytes) to dst; it is
// FuzzConfig.Next.
func (c *FuzzSource) Next(dst []byte) []byte {
	if len(c.samples) == 0 || c.rng.IntN(2) == 0 {
		return c.g.Next(dst)
	}
	s := c.samples[c.rng.IntN(len(c.samples))]
	b := append(dst, s...)
	switch c.rng.IntN(8) {
	case 0, 1: // as is
	case 2: // flip a bit
		i := c.rng.IntN(len(b))
		b[i] ^= 1 << c.rng.IntN(8)
	case 3: // a random byte
		b[c.rng.IntN(len(b))] = byte(c.rng.Uint32())
	case 4: // prepend a legacy prefix
		pf := []byte{0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3}
		b = append([]byte{pf[c.rng.IntN(len(pf))]}, b...)
	case 5: // randomize the bytes after the opcode (ModRM, SIB, displacement, immediate)
		for i := min(len(b)-1, 1+c.rng.IntN(2)); i < len(b); i++ {
			b[i] = byte(c.rng.Uint32())
		}
	case 6: // drop the first byte
		if len(b) > 1 {
			b = b[1:]
		}
	case 7: // pad with random tail bytes (the decoder decides the length)
		for range 4 {
			b = append(b, byte(c.rng.Uint32()))
		}
	}
	if len(b) > 15 {
		b = b[:15]
	}
	return b
}

// SampleKernelInsts decodes the executable sections of the cached Debian
// vmlinux for the mode (kimage.CacheDir; else up to 20 x86-64 binaries from
// /usr/bin) and returns up to max instructions, evenly sampled, and a note
// saying where they come from.
func SampleKernelInsts(m decode.Mode, max int, seed uint64) ([][]byte, string) {
	want := elf.EM_X86_64
	if m == decode.Mode32 {
		want = elf.EM_386
	}
	var files []string
	if elfs, _ := filepath.Glob(filepath.Join(kimage.CacheDir(), "vmlinux", "*.elf")); len(elfs) > 0 {
		for _, p := range elfs {
			if f, err := elf.Open(p); err == nil {
				if f.Machine == want {
					files = append(files, p)
				}
				f.Close()
			}
		}
	}
	if len(files) == 0 {
		bins, _ := filepath.Glob("/usr/bin/*")
		sort.Strings(bins)
		for _, p := range bins {
			if len(files) >= 20 {
				break
			}
			if f, err := elf.Open(p); err == nil {
				if f.Machine == elf.EM_X86_64 {
					files = append(files, p)
				}
				f.Close()
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x73616d70))
	var out [][]byte
	execSections(files, func(sec *elf.Section, data []byte) {
		var in decode.Inst
		// keep about max/len(files) instructions per file
		keep := float64(max) / float64(len(files)) / float64(len(data)/4+1)
		for off := 0; off < len(data); {
			err := decode.DecodeInto(&in, data[off:], m, sec.Addr+uint64(off))
			l := in.Len
			if l < 1 {
				l = 1
			}
			if err == nil && rng.Float64() < keep {
				out = append(out, append([]byte(nil), data[off:off+l]...))
			}
			off += l
		}
	})
	if len(out) > max {
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		out = out[:max]
	}
	from := "none (structured generation only)"
	if len(files) > 0 {
		from = fmt.Sprintf("%d instructions from %s", len(out), filepath.Base(files[0]))
		if len(files) > 1 {
			from += fmt.Sprintf(" and %d more", len(files)-1)
		}
	}
	return out, from
}
