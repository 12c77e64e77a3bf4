//go:build linux && amd64

package native

import (
	"fmt"
	"sync"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
)

// pfFetch is the page-fault error code bit "instruction fetch".
const pfFetch = 0x10

// probeVerdict classifies one probe that placed k bytes against the unmapped
// page at boundary: needMore is true when the CPU tried to fetch past them
// while still decoding the instruction at entry.
func probeVerdict(r *kernelsim.Result, entry, boundary uint64) (needMore bool, o LengthOutcome) {
	switch r.Outcome {
	case kernelsim.TimedOut, kernelsim.Crashed:
		return false, LenUnknown
	case kernelsim.Completed:
		// only possible if the code cleared TF and jumped into the runner
		return false, LenExecuted
	}
	f := r.Fault
	fetch := f.Signal == kernelsim.SIGSEGV && f.Trap == 14 && f.ErrorCode&pfFetch != 0 && f.Addr >= boundary && f.Addr < boundary+16
	switch {
	case fetch && r.Regs.PC == entry:
		return true, LenTooShort
	case fetch:
		return false, LenExecuted // TF was cleared; the next fetch hit the boundary
	case f.Signal == kernelsim.SIGTRAP && f.Trap == 1:
		return false, LenExecuted
	case f.Signal == kernelsim.SIGILL:
		return false, LenRejected
	}
	return false, LenFaulted
}

// probeRegs is the register state of length probes: every register points
// into the middle of the scratch page, so memory operands usually hit mapped
// memory; only TF is set in the flags.
func probeRegs(a *kernelsim.Arch) kernelsim.Regs {
	var r kernelsim.Regs
	for i := range a.NumGPR() {
		r.GPR[i] = a.Layout.Scratch + kernelsim.ScratchSize/2
	}
	r.GPR[rSP] = a.Layout.InitialSP()
	r.Flags = kernelsim.FlagTF
	return r
}

// HWLengths runs the sandsifter length oracle on every byte string: the first
// k bytes are placed so they end at the last byte of the code page (the next
// page is never mapped) and executed with the trap flag set; a fetch fault on
// the next page with the PC still at the start means the CPU wants more than k
// bytes. A binary search over k = 1..min(len, 15) finds the CPU's length; all
// strings are searched together, one batch per search round (about four).
func (s *Sandbox) HWLengths(bs [][]byte, out []HWLen) error {
	return s.HWLengthsHint(bs, nil, out)
}

// HWLengthsHint is HWLengths with expected lengths (e.g. the decoder's;
// 0 = none): the first round probes hint-1 and hint bytes, which settles a
// correct hint in one round and two executions.
func (s *Sandbox) HWLengthsHint(bs [][]byte, hints []int, out []HWLen) error {
	if len(out) < len(bs) {
		return fmt.Errorf("kernelsim: %d results for %d byte strings", len(out), len(bs))
	}
	if s.emu != "" {
		return fmt.Errorf("kernelsim: %s length oracle: the sandbox runs under %s, whose decoder is not the CPU's: %w", s.arch.Name, s.emu, errNotSupported)
	}
	// Search state: lengths below lo need more bytes; hi is the smallest
	// length known to be enough (n+1 while unknown: "needs more than n").
	type state struct{ lo, hi, n int }
	st := make([]state, len(bs))
	type probe struct{ i, k int }
	var probes []probe
	for i, b := range bs {
		n := min(len(b), 15)
		out[i] = HWLen{}
		st[i] = state{lo: 1, hi: n + 1, n: n}
		if n == 0 {
			out[i].Outcome = LenTooShort
			continue
		}
		if hints != nil && hints[i] >= 1 && hints[i] <= n {
			h := hints[i]
			if h > 1 {
				probes = append(probes, probe{i, h - 1})
			}
			probes = append(probes, probe{i, h})
		} else {
			probes = append(probes, probe{i, (1 + n + 1) / 2})
		}
	}
	l := s.arch.Layout
	regs := probeRegs(s.arch)
	cases := make([]kernelsim.Case, 0, maxBatch)
	res := make([]kernelsim.Result, maxBatch)
	for len(probes) > 0 {
		for start := 0; start < len(probes); start += maxBatch {
			chunk := probes[start:min(start+maxBatch, len(probes))]
			cases = cases[:0]
			for _, p := range chunk {
				// zeroed scratch and stack: outcomes must not depend on what
				// earlier probes stored (divisors, selectors, pointers)
				cases = append(cases, kernelsim.Case{Code: bs[p.i][:p.k], CodeOffset: kernelsim.PageSize - p.k, Regs: regs})
			}
			for done := 0; done < len(cases); {
				n, err := s.runBatch(cases[done:], res[done:len(cases)], cfTrap)
				if err != nil {
					return err
				}
				done += n
			}
			for j, p := range chunk {
				o := &out[p.i]
				o.Probes++
				if o.Outcome == LenUnknown && o.N < 0 {
					continue // an earlier probe of this string was inconclusive
				}
				more, v := probeVerdict(&res[j], cases[j].Entry(l), l.Orig+kernelsim.PageSize)
				switch {
				case v == LenUnknown:
					o.N, o.Outcome = -1, LenUnknown
				case more:
					st[p.i].lo = max(st[p.i].lo, p.k+1)
					if p.k == st[p.i].n {
						o.Fault = res[j].Fault
					}
				case p.k < st[p.i].hi:
					st[p.i].hi = p.k
					o.N, o.Outcome, o.Fault = p.k, v, res[j].Fault
				}
			}
		}
		// next round
		var next []probe
		for i := range bs {
			o := &out[i]
			if st[i].n == 0 || (o.Outcome == LenUnknown && o.N < 0) {
				continue
			}
			if st[i].lo >= st[i].hi {
				if st[i].hi == st[i].n+1 {
					o.N, o.Outcome = st[i].n, LenTooShort
				}
				st[i].n = 0 // settled
				continue
			}
			next = append(next, probe{i, (st[i].lo + st[i].hi) / 2})
		}
		probes = next
	}
	for i := range out[:len(bs)] {
		if out[i].N < 0 {
			out[i].N = 0
		}
	}
	return nil
}

var (
	hwMu   sync.Mutex
	hwSand = map[decode.Mode]*Sandbox{}
)

// HWLength asks the CPU for the length of the instruction at the start of b
// (see Sandbox.HWLengths). It keeps one sandbox per mode for the life of the
// program; use Sandbox.HWLengths for batches.
func HWLength(b []byte, mode decode.Mode) (int, LengthOutcome, error) {
	a, err := kernelsim.ArchFor(mode)
	if err != nil {
		return 0, LenUnknown, err
	}
	hwMu.Lock()
	defer hwMu.Unlock()
	s := hwSand[mode]
	if s == nil {
		if s, err = New(a); err != nil {
			return 0, LenUnknown, err
		}
		hwSand[mode] = s
	}
	var r [1]HWLen
	if err := s.HWLengths([][]byte{b}, r[:]); err != nil {
		return 0, LenUnknown, err
	}
	return r[0].N, r[0].Outcome, nil
}
