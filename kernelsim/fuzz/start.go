package fuzz

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kimage"
)

// Backend is what a fuzz run needs from its backend.
type Backend interface {
	kernelsim.Backend
	Emulator() string // the qemu-user binary that runs the cases, "" on the CPU
}

// Engine is a fuzzer of any instruction set: Fuzzer (x86), A64Fuzzer,
// A32Fuzzer (arm, thumb).
type Engine interface {
	Seek(block uint64)
	Restore(st Stats, keys []string)
	Block(n int) error
	Finish() Stats
	Counts() *Stats
}

// StartOptions configure Start.
type StartOptions struct {
	Policy      *boost.Policy
	Trials      int
	Seed        uint64
	Backend     kernelsim.Options
	CaseTimeout time.Duration // x86 on the CPU: a case's time limit (0: the sandbox's default)
	OnFinding   func(*Finding)
}

// starters open, per instruction set, the backend and the fuzzer with its
// generator; samples says what the generator mutates.
var starters = map[*decode.Arch]func(o *StartOptions) (b Backend, e Engine, samples string, err error){}

// Start opens arch's backend (the caller closes it) and a fuzzer on it:
// the one `kboost fuzz --arch` runs, mutating instructions of the cached
// Debian kernels where there are some.
func Start(arch *decode.Arch, o *StartOptions) (Backend, Engine, string, error) {
	st := starters[arch]
	if st == nil {
		return nil, nil, "", fmt.Errorf("fuzz: no fuzzer for %s: %w", arch.Name, decode.ErrNotSupported)
	}
	return st(o)
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
		return nil, noSamples
	}
	rng := rand.New(rand.NewPCG(seed, 0x73616d70))
	var out []uint32
	execSections(files, func(_ *elf.Section, data []byte) {
		keep := float64(max) / float64(len(files)) / float64(len(data)/4+1)
		for off := 0; off+4 <= len(data); off += 4 {
			if rng.Float64() < keep {
				out = append(out, binary.LittleEndian.Uint32(data[off:]))
			}
		}
	})
	if len(out) == 0 {
		return nil, noSamples
	}
	return out, fmt.Sprintf("%d words from %s", len(out), filepath.Base(files[0]))
}

const noSamples = "none (class-directed generation only)"

// execSections calls each with the contents of every executable PROGBITS
// section of the ELF files, in order (files that do not open are passed over).
func execSections(files []string, each func(sec *elf.Section, data []byte)) {
	for _, p := range files {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		for _, sec := range f.Sections {
			if sec.Flags&elf.SHF_EXECINSTR == 0 || sec.Type != elf.SHT_PROGBITS {
				continue
			}
			if data, err := sec.Data(); err == nil {
				each(sec, data)
			}
		}
		f.Close()
	}
}
