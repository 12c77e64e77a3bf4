package cli

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kimage"
)

// newA32Fuzz starts the qemu-arm backend and an A32 fuzzer on it, mutating
// words of a cached 32-bit ARM vmlinux when there is one.
func newA32Fuzz(pol *boost.Policy, trials int, seed uint64, tag string, onFinding func(*kernelsim.Finding)) (fuzzBackend, fuzzEngine, string, error) {
	g, err := kernelsim.NewGDB(kernelsim.ARM32, kernelsim.Options{Tag: tag})
	if err != nil {
		return nil, nil, "", err
	}
	samples, from := sampleA32Words(200000, seed)
	gen := kernelsim.NewA32Gen(seed, samples)
	fz := kernelsim.NewA32Fuzzer(kernelsim.FuzzConfig{Backend: g, Policy: pol, Trials: trials, Seed: seed, Next: gen.Next, OnFinding: onFinding})
	return g, fz, from, nil
}

// sampleA32Words returns up to max words from the executable sections of
// cached 32-bit ARM vmlinux images, evenly sampled.
func sampleA32Words(max int, seed uint64) ([]uint32, string) {
	elfs, _ := filepath.Glob(filepath.Join(kimage.CacheDir(), "vmlinux", "*.elf"))
	rng := rand.New(rand.NewPCG(seed, 0x73616d70))
	var out []uint32
	from := ""
	for _, p := range elfs {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		if f.Machine != elf.EM_ARM {
			f.Close()
			continue
		}
		for _, sec := range f.Sections {
			if sec.Flags&elf.SHF_EXECINSTR == 0 || sec.Type != elf.SHT_PROGBITS {
				continue
			}
			data, err := sec.Data()
			if err != nil {
				continue
			}
			keep := float64(max) / float64(len(data)/4+1)
			for off := 0; off+4 <= len(data); off += 4 {
				if rng.Float64() < keep {
					out = append(out, binary.LittleEndian.Uint32(data[off:]))
				}
			}
		}
		f.Close()
		from = filepath.Base(p)
		break
	}
	if len(out) == 0 {
		return nil, "none (class-directed generation only)"
	}
	return out, fmt.Sprintf("%d words from %s", len(out), from)
}
