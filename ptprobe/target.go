package ptprobe

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/uprobe"
)

// probedArches are the instruction sets kboost trace probes; per-arch files
// add theirs (x86_target.go).
var probedArches []*decode.Arch

// probedArchNames names probedArches for a message ("x86-64", "a or b").
func probedArchNames() string {
	var n []string
	for _, a := range probedArches {
		n = append(n, a.Name)
	}
	return strings.Join(n, " or ")
}

// Options say what to probe and how.
type Options struct {
	// Argv starts a command; Pid attaches to a running tree. Exactly one.
	Argv  []string
	Pid   int
	Env   []string
	Stdio [3]*os.File
	// Binary is the ELF file whose functions Points name; processes of the
	// tree that execute it are probed. Empty: the command (found in PATH),
	// or /proc/PID/exe.
	Binary string
	// Points are SYM, SYM+OFF or 0xADDR (link-time addresses, as nm shows).
	Points []string
	Mode   Mode
	// Out receives the plan (one line per probe) when not nil.
	Out  io.Writer
	JSON bool
	// Hits adds one record per hit to Out: int3-based probes' at their
	// stops, jump probes' from the ring their trampolines write (no stop).
	Hits bool
	// Args adds the argument registers (rdi, rsi, rdx, rcx, r8, r9) to
	// each hit record (implies Hits).
	Args bool
}

// Target is a validated point of the binary (link-time address).
type Target struct {
	Point      string `json:"point"`
	Func       string `json:"func"`
	FuncAddr   uint64 `json:"-"`
	FuncSize   uint64 `json:"-"`
	Off        uint64 `json:"off"`
	FileOffset uint64 `json:"-"`
}

// Resolve checks every point against the binary with the uprobe audit
// (the function, instruction boundaries, the file offset) before anything
// runs, so bad input fails with one message and nothing started.
func Resolve(path string, points []string) ([]Target, error) {
	if len(points) == 0 {
		return nil, fmt.Errorf("%w: no probe point (give --probe SYM[+OFF] or 0xADDR)", ErrPoint)
	}
	if len(points) > MaxProbes {
		return nil, fmt.Errorf("%w: %d probe points, at most %d", ErrPoint, len(points), MaxProbes)
	}
	b, err := uprobe.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPoint, err)
	}
	defer b.Close()
	if !slices.Contains(probedArches, b.Arch) {
		return nil, fmt.Errorf("%w: %s is not an %s ELF (kboost trace probes %s code)", ErrPoint, path, probedArchNames(), probedArchNames())
	}
	k, _ := uprobe.Running()
	var out []Target
	seen := map[uint64]string{}
	for _, pt := range points {
		r, err := uprobe.ParseRequest(pt)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPoint, err)
		}
		if r.USDT != "" || r.Return {
			return nil, fmt.Errorf("%w: %s: kboost trace takes SYM, SYM+OFF or 0xADDR", ErrPoint, pt)
		}
		s, fa, err := uprobe.Check(b, k, r)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPoint, err)
		}
		if fa == nil || s.Func == "" {
			return nil, fmt.Errorf("%w: %s: not inside a function of %s (its branch targets must be known)", ErrPoint, pt, path)
		}
		if !s.Boundary {
			return nil, fmt.Errorf("%w: %s: %#x is not an instruction boundary of %s (it falls inside %s); probe an instruction's first byte", ErrPoint, pt, uint64(s.Addr), s.Func, s.Within)
		}
		if prev, dup := seen[uint64(s.Addr)]; dup {
			return nil, fmt.Errorf("%w: %s and %s are the same address %#x", ErrPoint, prev, pt, uint64(s.Addr))
		}
		seen[uint64(s.Addr)] = pt
		out = append(out, Target{Point: pt, Func: s.Func, FuncAddr: fa.Func.Addr, FuncSize: fa.Func.Size,
			Off: s.Off, FileOffset: uint64(s.FileOffset)})
	}
	return out, nil
}
