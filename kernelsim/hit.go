package kernelsim

import "fmt"

// Trial is one initial machine state a differential check starts from.
type Trial struct {
	Regs    Regs
	Scratch []byte
	Stack   []byte
}

// HitCheck is one differential check: the in-place run and the simulated hit.
type HitCheck struct {
	Trial      Trial
	Ref, Hit   Case
	RefR, HitR Result
	Diff       Diff
}

// hitModel is a probe model that CheckHit and CheckHitA64 drive: the
// in-place case, the hit's case, the handler's write-back and the
// comparison.
type HitModel interface {
	RefCase(t *Trial) Case
	HitCase(path Path, slot []byte, t *Trial) (Case, error)
	FixHit(path Path, r *Result)
	ComparePath(path Path, c *Case, ref, cand *Result) Diff
}

// checkHits runs m in place and through the hit on path for every trial on b
// (in one batch) and compares them. Both runs have the hit's slot page
// mapped with the same contents; only the hit enters it.
func CheckModel(b Backend, m HitModel, path Path, slot []byte, trials []Trial) ([]HitCheck, error) {
	out := make([]HitCheck, len(trials))
	cases := make([]Case, 0, 2*len(trials))
	for i := range trials {
		if err := out[i].Prepare(m, path, slot, &trials[i]); err != nil {
			return nil, err
		}
		cases = append(cases, out[i].Ref, out[i].Hit)
	}
	res := make([]Result, len(cases))
	if err := b.Run(cases, res); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Finish(m, path, &res[2*i], &res[2*i+1])
	}
	return out, nil
}

// prepare sets up the in-place and hit cases of one check from t.
func (hc *HitCheck) Prepare(m HitModel, path Path, slot []byte, t *Trial) error {
	hc.Trial = *t
	hc.Ref = m.RefCase(t)
	h, err := m.HitCase(path, slot, t)
	if err != nil {
		return err
	}
	hc.Hit = h
	// the in-place run sees the same slot page (not entered)
	hc.Ref.Slot, hc.Ref.SlotOffset = h.Slot, h.SlotOffset
	return nil
}

// finish compares the results of the check's two cases.
func (hc *HitCheck) Finish(m HitModel, path Path, ref, hit *Result) {
	hc.RefR, hc.HitR = *ref, *hit
	m.FixHit(path, &hc.HitR)
	hc.Diff = m.ComparePath(path, &hc.Hit, &hc.RefR, &hc.HitR)
}

// Summarize folds the verdicts of several trials into one: Diverged if any
// diverged, else Inconclusive if any was, else NotVerifiable if any was, else
// Equivalent.
func Summarize(ds []Diff) Verdict {
	v := Equivalent
	rank := map[Verdict]int{Equivalent: 0, NotVerifiable: 1, Inconclusive: 2, Diverged: 3}
	for _, d := range ds {
		if rank[d.Verdict] > rank[v] {
			v = d.Verdict
		}
	}
	return v
}

func (h *HitCheck) String() string {
	return fmt.Sprintf("%v / %v: %v", h.RefR.Outcome, h.HitR.Outcome, h.Diff)
}
