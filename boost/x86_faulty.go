//go:build kboost_faulty

package boost

// faultyRelBranch is a deliberately wrong policy, compiled only with the
// kboost_faulty build tag: linux-6.1 whose can_boost forgot that relative
// branches (jcc, jmp, call, loop/jcxz) are position dependent, so it boosts
// them from the slot, where they jump relative to the slot. It exists for the
// test that a fuzz campaign which finds unsafe boosts says so and exits 1:
// kboost's real policies give the fuzzer no such finding to report.
// linux61 is complete at its declaration (classify included), so the copy is
// whole whenever this runs.
func faultyRelBranch() *Policy {
	p := *linux61
	p.Name = "faulty-relbranch"
	p.Title = "TEST ONLY: linux-6.1 boosting relative branches from the slot (wrong on purpose)"
	p.Source = "none: a deliberately wrong can_boost (build tag kboost_faulty)"
	p.canBoost = func(c *cls, k *kinsn, a uint64, env *Env) bool {
		if o := k.op[0]; k.nop == 1 && (o >= 0x70 && o <= 0x7f || o >= 0xe0 && o <= 0xe3 || o == 0xe8 || o == 0xe9 || o == 0xeb) {
			if c != nil {
				c.step(rCBOK, Pass, "relative branch boosted (the faulty model's mistake)")
			}
			return true
		}
		return canBoost61(c, k, a, env)
	}
	return &p
}

func init() { policies = append(policies, faultyRelBranch()) }
