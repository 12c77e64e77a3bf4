package kernelsim

import (
	"math/rand/v2"
	"time"

	"github.com/kboost/kboost/boost"
)

// fuzzCore is what every fuzz engine shares (Fuzzer for x86, A64Fuzzer,
// A32Fuzzer for ARM and Thumb): the configuration and the policy's
// environment, the random source, the trial states, the counts and rates,
// and the deduplicated reporting of findings.
type fuzzCore struct {
	cfg    FuzzConfig
	a      *Arch
	env    boost.Env
	rng    *rand.Rand
	seen   map[string]int
	Stats  FuzzStats
	start  time.Time
	cpu0   time.Duration
	trials []Trial
	// Judging (Fuzzer and A64Fuzzer; see fuzzjudge.go): the engine's rules,
	// the states that confirm missed boosts, and their cases and results
	// (reused: a Result holds 8 KiB).
	rules    judgeRules
	extra    []Trial
	mcases   []Case
	mresults []Result
}

// init sets up the core for cfg: Trials defaults to 3 and Env to
// SimEnv(Policy); stream seeds the random source (one per engine, so
// runs of different engines with the same seed differ); lengthOracle
// describes the length check for the summary.
func (f *fuzzCore) init(cfg FuzzConfig, stream uint64, lengthOracle string) {
	if cfg.Trials <= 0 {
		cfg.Trials = 3
	}
	if cfg.Env == nil {
		cfg.Env = SimEnv(cfg.Policy)
	}
	f.cfg, f.a, f.env = cfg, cfg.Backend.Arch(), *cfg.Env
	f.seen, f.start = map[string]int{}, time.Now()
	f.rng = rand.New(rand.NewPCG(cfg.Seed, stream))
	f.Stats.Verdicts = map[string]int{}
	f.Stats.LengthOracle = lengthOracle
	f.trials = make([]Trial, cfg.Trials)
	if c, ok := cfg.Backend.(cpuTimer); ok {
		f.cpu0 = c.CPUTime()
	}
}

// Counts returns the running counts.
func (f *fuzzCore) Counts() *FuzzStats { return &f.Stats }

// Finish computes the rates.
func (f *fuzzCore) Finish() FuzzStats {
	f.Stats.Elapsed = time.Since(f.start).Seconds()
	if c, ok := f.cfg.Backend.(cpuTimer); ok {
		f.Stats.CPUSeconds = (c.CPUTime() - f.cpu0).Seconds()
		if f.Stats.CPUSeconds > 0 {
			f.Stats.ChecksPerCPUSecond = float64(f.Stats.Checks) / f.Stats.CPUSeconds
		}
	}
	if f.Stats.Elapsed > 0 {
		f.Stats.ChecksPerSecond = float64(f.Stats.Checks) / f.Stats.Elapsed
		f.Stats.CasesPerSecond = float64(f.Stats.Cases) / f.Stats.Elapsed
	}
	return f.Stats
}

// report hands a new finding to OnFinding; a key seen before only counts.
func (f *fuzzCore) report(fd *Finding) {
	if f.seen[fd.Key] > 0 {
		f.seen[fd.Key]++
		return
	}
	f.seen[fd.Key] = 1
	f.Stats.FindingKeys++
	fd.Arch, fd.Policy = f.a.Name, f.cfg.Policy.Name
	if f.cfg.OnFinding != nil {
		f.cfg.OnFinding(fd)
	}
}

// differs runs the same in-place case three times and reports whether the
// results differ (a nondeterministic instruction: its divergences do not
// count).
func (f *fuzzCore) differs(c Case) bool {
	cs := []Case{c, c, c}
	rs := make([]Result, 3)
	if err := f.cfg.Backend.Run(cs, rs); err != nil {
		return false
	}
	return f.a.Compare(&rs[0], &rs[1], nil).Verdict != Equivalent || f.a.Compare(&rs[1], &rs[2], nil).Verdict != Equivalent
}
