package cli

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/fuzz"
	"github.com/kboost/kboost/kimage"
)

// fuzzBackend is what the fuzz command needs from a backend.
type fuzzBackend interface {
	kernelsim.Backend
	Emulator() string
}

// fuzzEngine is a fuzz engine: fuzz.Fuzzer (x86), A64Fuzzer, A32Fuzzer (arm, thumb).
type fuzzEngine interface {
	Seek(block uint64)
	Restore(st fuzz.Stats, keys []string)
	Block(n int) error
	Finish() fuzz.Stats
	Counts() *fuzz.Stats
}

// newA64Fuzz starts the qemu-aarch64 backend and an A64 fuzzer on it,
// mutating words of the cached Debian arm64 vmlinux when there is one.
func newA64Fuzz(pol *boost.Policy, trials int, seed uint64, opts kernelsim.Options, onFinding func(*fuzz.Finding)) (fuzzBackend, fuzzEngine, string, error) {
	g, err := kernelsim.NewGDB(kernelsim.ARM64, opts)
	if err != nil {
		return nil, nil, "", err
	}
	samples, from := sampleWords(elf.EM_AARCH64, 200000, seed)
	gen := fuzz.NewA64Gen(seed, samples)
	fz := fuzz.NewA64Fuzzer(fuzz.Config{Backend: g, Policy: pol, Trials: trials, Seed: seed, Source: gen, OnFinding: onFinding})
	return g, fz, from, nil
}

// sampleWords returns up to max instruction words from the executable
// sections of the cached vmlinux images for machine, evenly sampled.
func sampleWords(machine elf.Machine, max int, seed uint64) ([]uint32, string) {
	var files []string
	elfs, _ := filepath.Glob(filepath.Join(kimage.CacheDir(), "vmlinux", "*.elf"))
	for _, p := range elfs {
		if f, err := elf.Open(p); err == nil {
			if f.Machine == machine {
				files = append(files, p)
			}
			f.Close()
		}
	}
	if len(files) == 0 {
		return nil, "none (class-directed generation only)"
	}
	rng := rand.New(rand.NewPCG(seed, 0x73616d70))
	var out []uint32
	for _, p := range files {
		f, err := elf.Open(p)
		if err != nil {
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
			keep := float64(max) / float64(len(files)) / float64(len(data)/4+1)
			for off := 0; off+4 <= len(data); off += 4 {
				if rng.Float64() < keep {
					out = append(out, binary.LittleEndian.Uint32(data[off:]))
				}
			}
		}
		f.Close()
	}
	if len(out) == 0 {
		return nil, "none (class-directed generation only)"
	}
	return out, fmt.Sprintf("%d words from %s", len(out), filepath.Base(files[0]))
}
