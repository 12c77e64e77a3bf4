package fuzz

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/kboost/kboost/kernelsim"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// fuzzCase is one fuzzed instruction as the judging steps shared by Fuzzer
// (x86) and A64Fuzzer see it; each engine's case embeds it.
type fuzzCase struct {
	m        kernelsim.HitModel // the probe (set once the block's cases no longer move)
	inst     decode.Inst
	dec      boost.Decision
	path     kernelsim.Path // where the policy sends a hit
	refAt    int            // index of the first in-place case
	polAt    int            // index of the first policy-hit case (-1: none)
	boostAt  int            // index of the first boost-hit case (-1: none)
	polDiffs []kernelsim.Diff
	bDiffs   []kernelsim.Diff
	missCand bool // boosted, it agreed on every trial: confirm with more states
	// the reruns of the first diverging trial, boosted and on path
	// (judgeBlock runs them in one batch; nil: not run)
	bRep, pRep *kernelsim.HitCheck
}

// judgeRules are an engine's parts of judging a case: how findings are
// grouped and shown, and which divergences do not count.
type judgeRules struct {
	// key groups the findings of one instruction form.
	key func(c *fuzzCase) string
	// hex shows the probed bytes of m.
	hex func(m kernelsim.HitModel) string
	// randomTrial draws a fresh state (confirming missed boosts).
	randomTrial func(rng *rand.Rand, t *kernelsim.Trial)
	// excuse returns the count to bump when a divergence of c does not
	// count (a nondeterministic instruction, an emulator artifact...), or
	// nil when it does.
	excuse func(c *fuzzCase) *int
	// vendorNote explains a divergence that is a vendor difference (it is
	// counted apart as well), "" for others. nil: none.
	vendorNote func(c *fuzzCase) string
	// variants lists smaller forms of m to try while minimizing (x86: one
	// legacy prefix fewer, still decided for path). nil: none.
	variants func(m kernelsim.HitModel, path kernelsim.Path) []kernelsim.HitModel
	// selfCheck is the key and the in-place case with which excuse asks
	// selfDiffers whether a diverging c is nondeterministic (rerunBlock
	// runs those of a block in one batch first). nil: excuse does not ask.
	selfCheck func(c *fuzzCase) (string, kernelsim.Case)
}

// judgeBlock compares every hit of the block's cases with its in-place run
// (cases and results as the backend ran them), judges each case and
// confirms the missed-boost candidates.
func (f *fuzzCore) judgeBlock(cs []*fuzzCase, cases []kernelsim.Case, results []kernelsim.Result) error {
	T := len(f.trials)
	for _, c := range cs {
		diffs := func(at int, path kernelsim.Path) []kernelsim.Diff {
			if at < 0 {
				return nil
			}
			ds := make([]kernelsim.Diff, T)
			for k := 0; k < T; k++ {
				r := &results[at+k]
				c.m.FixHit(path, r)
				ds[k] = c.m.ComparePath(path, &cases[at+k], &results[c.refAt+k], r)
				f.Stats.Checks++
			}
			return ds
		}
		c.polDiffs = diffs(c.polAt, c.path)
		c.bDiffs = diffs(c.boostAt, kernelsim.PathBoost)
	}
	f.rerunBlock(cs)
	for _, c := range cs {
		f.judge(c)
	}
	return f.confirmMissed(cs)
}

// rerunBlock runs, in one batch, what judging the block's diverging cases
// asks the backend: whether their in-place run is nondeterministic
// (rules.selfCheck, once per key) and the rerun of their first diverging
// trial (reproduces), boosted and on their path. One round trip instead of
// one per question; a case the batch could not prepare asks on its own.
func (f *fuzzCore) rerunBlock(cs []*fuzzCase) {
	var (
		keys  []string
		cases []kernelsim.Case
		reps  []*kernelsim.HitCheck
		at    []kernelsim.HitModel
		paths []kernelsim.Path
	)
	rerun := func(c *fuzzCase, path kernelsim.Path, ds []kernelsim.Diff) *kernelsim.HitCheck {
		for k, d := range ds {
			if d.Verdict != kernelsim.Diverged {
				continue
			}
			hc := new(kernelsim.HitCheck)
			if hc.Prepare(c.m, path, nil, &f.trials[k]) != nil {
				return nil
			}
			reps, at, paths = append(reps, hc), append(at, c.m), append(paths, path)
			return hc
		}
		return nil
	}
	for _, c := range cs {
		c.bRep, c.pRep = nil, nil
		bd, pd := kernelsim.Summarize(c.bDiffs), kernelsim.Summarize(c.polDiffs)
		if bd != kernelsim.Diverged && pd != kernelsim.Diverged {
			continue
		}
		if f.rules.selfCheck != nil {
			k, rc := f.rules.selfCheck(c)
			if _, ok := f.nondet[k]; !ok && !slices.Contains(keys, k) {
				keys, cases = append(keys, k), append(cases, rc, rc, rc)
			}
		}
		if bd == kernelsim.Diverged {
			c.bRep = rerun(c, kernelsim.PathBoost, c.bDiffs)
		}
		if pd == kernelsim.Diverged {
			c.pRep = rerun(c, c.path, c.polDiffs)
		}
	}
	n := len(cases)
	for _, hc := range reps {
		cases = append(cases, hc.Ref, hc.Hit)
	}
	if len(cases) == 0 {
		return
	}
	rs := make([]kernelsim.Result, len(cases))
	if err := f.cfg.Backend.Run(cases, rs); err != nil {
		for _, c := range cs {
			c.bRep, c.pRep = nil, nil
		}
		return
	}
	for i, k := range keys {
		r := rs[3*i:]
		f.nondet[k] = f.a.Compare(&r[0], &r[1], nil).Verdict != kernelsim.Equivalent || f.a.Compare(&r[1], &r[2], nil).Verdict != kernelsim.Equivalent
	}
	for i, hc := range reps {
		hc.Finish(at[i], paths[i], &rs[n+2*i], &rs[n+2*i+1])
	}
}

// judge counts one case: a divergence (boosted, or on the policy's path)
// counts only when the engine does not excuse it and it reproduces from the
// same state; a case that agreed when boosted although the policy does not
// boost it becomes a missed-boost candidate.
func (f *fuzzCore) judge(c *fuzzCase) {
	bd, pd := kernelsim.Summarize(c.bDiffs), kernelsim.Summarize(c.polDiffs)
	if bd == kernelsim.Diverged || pd == kernelsim.Diverged {
		if n := f.rules.excuse(c); n != nil {
			*n++
			return
		}
	}
	reran := func(hc *kernelsim.HitCheck, path kernelsim.Path, ds []kernelsim.Diff) *kernelsim.HitCheck {
		if hc == nil {
			return f.reproduces(c.m, path, ds)
		}
		if hc.Diff.Verdict != kernelsim.Diverged {
			return nil
		}
		return hc
	}
	var bRep, pRep *kernelsim.HitCheck
	if bd == kernelsim.Diverged {
		if bRep = reran(c.bRep, kernelsim.PathBoost, c.bDiffs); bRep == nil {
			f.Stats.Unreproducible++
			return
		}
	}
	if pd == kernelsim.Diverged {
		if pRep = reran(c.pRep, c.path, c.polDiffs); pRep == nil {
			f.Stats.Unreproducible++
			return
		}
	}
	switch c.path {
	case kernelsim.PathBoost:
		switch bd {
		case kernelsim.Diverged:
			f.divergence("unsafe-boost", c, kernelsim.PathBoost, c.bDiffs, bRep)
			f.Stats.UnsafeBoosts++
		case kernelsim.NotVerifiable:
			f.Stats.NotVerifiable++
		case kernelsim.Inconclusive:
			f.Stats.Inconclusive++
		}
	default:
		if c.polAt >= 0 {
			switch pd {
			case kernelsim.Diverged:
				f.divergence("policy-divergence", c, c.path, c.polDiffs, pRep)
				f.Stats.PolicyDivergences++
				if f.rules.vendorNote != nil && f.rules.vendorNote(c) != "" {
					f.Stats.VendorDivergences++
				}
			case kernelsim.NotVerifiable:
				f.Stats.NotVerifiable++
			case kernelsim.Inconclusive:
				f.Stats.Inconclusive++
			}
		}
		if c.boostAt >= 0 && bd == kernelsim.Equivalent {
			c.missCand = true // confirmed with more states by confirmMissed
		}
	}
}

// missConfirm is how many more random states a missed-boost candidate must
// agree on (a jcc not taken on three states is no missed boost).
const missConfirm = 8

// confirmMissed runs every missed-boost candidate of the block boosted from
// missConfirm fresh states (in one batch) and reports those that still
// agree everywhere.
func (f *fuzzCore) confirmMissed(cs []*fuzzCase) error {
	var cands []*fuzzCase
	for _, c := range cs {
		if c.missCand {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	if len(f.extra) != missConfirm {
		f.extra = make([]kernelsim.Trial, missConfirm)
	}
	for k := range f.extra {
		f.rules.randomTrial(f.rng, &f.extra[k])
	}
	cases := f.mcases[:0]
	for _, c := range cands {
		for k := range f.extra {
			h, err := c.m.HitCase(kernelsim.PathBoost, nil, &f.extra[k])
			if err != nil {
				return err
			}
			r := c.m.RefCase(&f.extra[k])
			r.Slot, r.SlotOffset = h.Slot, h.SlotOffset
			cases = append(cases, r, h)
		}
	}
	f.mcases = cases
	if len(f.mresults) < len(cases) {
		f.mresults = append(f.mresults, make([]kernelsim.Result, len(cases)-len(f.mresults))...)
	}
	rs := f.mresults[:len(cases)]
	if err := f.cfg.Backend.Run(cases, rs); err != nil {
		return err
	}
	T := len(f.trials) + missConfirm
	for j, c := range cands {
		ok := true
		for k := 0; k < missConfirm; k++ {
			at := 2 * (j*missConfirm + k)
			f.Stats.Checks++
			if c.m.ComparePath(kernelsim.PathBoost, &cases[at+1], &rs[at], &rs[at+1]).Verdict != kernelsim.Equivalent {
				ok = false
			}
		}
		if !ok {
			continue
		}
		f.Stats.MissedBoosts++
		f.report(&Finding{Kind: "missed-boost", Key: "missed:" + f.rules.key(c), Bytes: f.rules.hex(c.m),
			Asm: decode.Format(&c.inst, nil), Verdict: c.dec.Verdict.String(), Path: c.path.String(), Reasons: c.dec.ReasonIDs(),
			Details: c.dec.ReasonTexts(), Trials: T, Note: "no state diverged when boosted"})
	}
	return nil
}

// divergence reports the first divergence of an instruction form with a
// reproducer minimized from rep, the rerun that reproduced it. Whether a
// divergence counts does not depend on the forms seen before (a campaign's
// blocks are independent: see Seek).
func (f *fuzzCore) divergence(kind string, c *fuzzCase, path kernelsim.Path, ds []kernelsim.Diff, rep *kernelsim.HitCheck) {
	key := kind + ":" + f.rules.key(c)
	if f.seen[key] > 0 {
		f.seen[key]++
		return
	}
	n, first := 0, -1
	var fields []string
	for k, d := range ds {
		if d.Verdict == kernelsim.Diverged {
			n++
			if first < 0 {
				first, fields = k, d.Fields
			}
		}
	}
	fd := &Finding{Kind: kind, Key: key, Bytes: f.rules.hex(c.m), Asm: decode.Format(&c.inst, nil),
		Verdict: c.dec.Verdict.String(), Path: path.String(), Reasons: c.dec.ReasonIDs(), Details: c.dec.ReasonTexts(), Diverged: fields,
		Trials: len(ds), DivergedTrials: n}
	if f.rules.vendorNote != nil {
		fd.Note = f.rules.vendorNote(c)
	}
	fd.Reproducer = f.minimize(c.m, path, rep)
	f.report(fd)
}

// minimize zeroes every register (but the stack pointer) whose value does
// not matter to the divergence of m on path from rep's state, then tries
// the engine's smaller variants of m while it still diverges.
func (f *fuzzCore) minimize(m kernelsim.HitModel, path kernelsim.Path, rep *kernelsim.HitCheck) *Reproducer {
	t := rep.Trial
	check := func(m kernelsim.HitModel, t *kernelsim.Trial) (kernelsim.Diff, kernelsim.Result, kernelsim.Result, bool) {
		hc, err := kernelsim.CheckModel(f.cfg.Backend, m, path, nil, []kernelsim.Trial{*t})
		if err != nil || hc[0].Diff.Verdict != kernelsim.Diverged {
			return kernelsim.Diff{}, kernelsim.Result{}, kernelsim.Result{}, false
		}
		return hc[0].Diff, hc[0].RefR, hc[0].HitR, true
	}
	d, ref, hit := rep.Diff, rep.RefR, rep.HitR
	for r := 0; r < f.a.NumGPR(); r++ {
		if r == f.a.SP || t.Regs.GPR[r] == 0 {
			continue
		}
		t2 := t
		t2.Regs.GPR[r] = 0
		if d2, r2, h2, ok := check(m, &t2); ok {
			t, d, ref, hit = t2, d2, r2, h2
		}
	}
	for changed := f.rules.variants != nil; changed; {
		changed = false
		for _, v := range f.rules.variants(m, path) {
			if d2, r2, h2, ok := check(v, &t); ok {
				m, d, ref, hit, changed = v, d2, r2, h2, true
				break
			}
		}
	}
	rp := &Reproducer{Bytes: f.rules.hex(m), Regs: map[string]string{}, Flags: fmt.Sprintf("%#x", t.Regs.Flags),
		InPlace: describe(f.a, &ref), Hit: describe(f.a, &hit), Diff: d.String()}
	for r := 0; r < f.a.NumGPR(); r++ {
		if t.Regs.GPR[r] != 0 {
			rp.Regs[f.a.RegNames[r]] = fmt.Sprintf("%#x", t.Regs.GPR[r])
		}
	}
	return rp
}

// reproduces reruns the first diverging trial of ds: a finding must diverge
// again from the same state. In the rerun the in-place case carries the
// hit's slot image too (not entered), so both runs see the same memory: an
// instruction whose operand happens to read the slot page is not a finding.
func (f *fuzzCore) reproduces(m kernelsim.HitModel, path kernelsim.Path, ds []kernelsim.Diff) *kernelsim.HitCheck {
	for k, d := range ds {
		if d.Verdict != kernelsim.Diverged {
			continue
		}
		hc, err := kernelsim.CheckModel(f.cfg.Backend, m, path, nil, []kernelsim.Trial{f.trials[k]})
		if err != nil || hc[0].Diff.Verdict != kernelsim.Diverged {
			return nil
		}
		return &hc[0]
	}
	return nil
}
