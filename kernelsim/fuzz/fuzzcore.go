package fuzz

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/kboost/kboost/kernelsim"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/internal/jsonv"
)

// fuzzCore is what every fuzz engine shares (Fuzzer for x86, A64Fuzzer,
// A32Fuzzer for ARM and Thumb): the configuration and the policy's
// environment, the random source, the trial states, the counts and rates,
// and the deduplicated reporting of findings.
type fuzzCore struct {
	cfg    Config
	a      *kernelsim.Arch
	env    boost.Env
	rng    *rand.Rand
	pcg    *rand.PCG
	stream uint64
	seen   map[string]int
	Stats  Stats
	start  time.Time
	cpu0   time.Duration
	// cpuPrior: the CPU seconds of a campaign's earlier runs (Restore).
	cpuPrior float64
	// block is the campaign block being run (Seek); findings carry it.
	block uint64
	// nondet memoizes, within a block, which in-place cases differ from
	// themselves (by the engine's key).
	nondet map[string]bool
	trials []kernelsim.Trial
	// Judging (Fuzzer and A64Fuzzer; see fuzzjudge.go): the engine's rules,
	// the states that confirm missed boosts, and their cases and results
	// (reused: a Result holds 8 KiB).
	rules    judgeRules
	extra    []kernelsim.Trial
	mcases   []kernelsim.Case
	mresults []kernelsim.Result
}

// init sets up the core for cfg: Trials defaults to 3 and Env to
// SimEnv(Policy); stream seeds the random source (one per engine, so
// runs of different engines with the same seed differ); lengthOracle
// describes the length check for the summary.
func (f *fuzzCore) init(cfg Config, stream uint64, lengthOracle string) {
	if cfg.Trials <= 0 {
		cfg.Trials = 3
	}
	if cfg.Env == nil {
		cfg.Env = kernelsim.SimEnv(cfg.Policy)
	}
	f.cfg, f.a, f.env = cfg, cfg.Backend.Arch(), *cfg.Env
	f.seen, f.start, f.nondet = map[string]int{}, time.Now(), map[string]bool{}
	f.pcg, f.stream = rand.NewPCG(cfg.Seed, stream), stream
	f.rng = rand.New(f.pcg)
	f.Stats.Verdicts = map[string]int{}
	f.Stats.LengthOracle = lengthOracle
	f.trials = make([]kernelsim.Trial, cfg.Trials)
	if c, ok := cfg.Backend.(cpuTimer); ok {
		f.cpu0 = c.CPUTime()
	}
}

// CaseSource generates a fuzz engine's candidates (FuzzSource for x86,
// A64Gen, A32Gen, T32Gen). Seed restarts its randomness: a campaign seeds
// it for each block (Seek).
type CaseSource interface {
	// Next appends one candidate to dst.
	Next(dst []byte) []byte
	Seed(s uint64)
}

// BlockSize is the number of cases in a campaign block: a campaign's case
// stream is its blocks 0, 1, 2..., block b holding cases [b*BlockSize,
// (b+1)*BlockSize).
const BlockSize = 64

// BlockSeed derives block b's seed from the campaign's (the splitmix64
// finalizer over both), so that resuming or sharding a campaign needs no
// replay of the blocks before b.
func BlockSeed(seed, b uint64) uint64 {
	mix := func(z uint64) uint64 {
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	return mix(seed ^ mix(b+0x9e3779b97f4a7c15))
}

// Seek makes the next Block the campaign's block b: the engine's and the
// source's randomness restart from BlockSeed(seed, b) and the memo of
// nondeterministic cases is dropped, so a block's counts and findings
// depend on (seed, b) alone, not on the blocks run before it (resume,
// shards). What does depend on them is which findings are new: a key is
// reported once, by the first block that meets it.
func (f *fuzzCore) Seek(b uint64) {
	s := BlockSeed(f.cfg.Seed, b)
	f.pcg.Seed(s, f.stream)
	f.cfg.Source.Seed(s)
	clear(f.nondet)
	f.block = b
}

// Restore continues a campaign from a checkpoint: its counts (elapsed and
// CPU time included) and the keys of the findings it has reported.
func (f *fuzzCore) Restore(st Stats, keys []string) {
	f.Stats = st
	if f.Stats.Verdicts == nil {
		f.Stats.Verdicts = map[string]int{}
	}
	f.start = time.Now().Add(-time.Duration(st.Elapsed * float64(time.Second)))
	f.cpuPrior = st.CPUSeconds
	for _, k := range keys {
		f.seen[k] = 1
	}
}

// FindingID is the content hash that identifies a finding across runs and
// shards: 16 hex digits of the SHA-256 of its arch, policy and key.
func FindingID(arch, policy, key string) string {
	h := sha256.Sum256([]byte(arch + "\x00" + policy + "\x00" + key))
	return hex.EncodeToString(h[:8])
}

// Counts returns the running counts.
func (f *fuzzCore) Counts() *Stats { return &f.Stats }

// Finish computes the rates.
func (f *fuzzCore) Finish() Stats {
	f.Stats.Elapsed = time.Since(f.start).Seconds()
	if c, ok := f.cfg.Backend.(cpuTimer); ok {
		f.Stats.CPUSeconds = f.cpuPrior + (c.CPUTime() - f.cpu0).Seconds()
		if f.Stats.CPUSeconds > 0 {
			f.Stats.ChecksPerCPUSecond = float64(f.Stats.Checks) / f.Stats.CPUSeconds
		}
	}
	f.Stats.setRates()
	return f.Stats
}

func (s *Stats) setRates() {
	if s.Elapsed > 0 {
		s.ChecksPerSecond = float64(s.Checks) / s.Elapsed
		s.CasesPerSecond = float64(s.Cases) / s.Elapsed
	}
	if s.CPUSeconds > 0 {
		s.ChecksPerCPUSecond = float64(s.Checks) / s.CPUSeconds
	}
}

// Add adds the counts of o (another shard of a campaign) to s: every count
// and the per-verdict and per-action maps; elapsed and CPU seconds are
// summed (worker time) and the rates recomputed from the sums.
// FindingKeys is summed too: a finding met by two shards counts twice
// until their findings are merged by ID.
func (s *Stats) Add(o *Stats) {
	sv, ov := reflect.ValueOf(s).Elem(), reflect.ValueOf(o).Elem()
	for i := range sv.NumField() {
		switch f := sv.Field(i); f.Kind() {
		case reflect.Int:
			f.SetInt(f.Int() + ov.Field(i).Int())
		case reflect.Map:
			if ov.Field(i).Len() == 0 {
				continue
			}
			if f.IsNil() {
				f.Set(reflect.MakeMap(f.Type()))
			}
			for it := ov.Field(i).MapRange(); it.Next(); {
				n := it.Value().Int()
				if v := f.MapIndex(it.Key()); v.IsValid() {
					n += v.Int()
				}
				f.SetMapIndex(it.Key(), reflect.ValueOf(int(n)))
			}
		}
	}
	s.Elapsed += o.Elapsed
	s.CPUSeconds += o.CPUSeconds
	if s.LengthOracle == "" {
		s.LengthOracle = o.LengthOracle
	}
	s.setRates()
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
	// every byte string of a finding in the one JSON form
	fd.Bytes = spacedHex(fd.Bytes)
	if fd.Reproducer != nil {
		fd.Reproducer.Bytes = spacedHex(fd.Reproducer.Bytes)
	}
	fd.ID, fd.Block = FindingID(fd.Arch, fd.Policy, fd.Key), f.block
	if f.cfg.OnFinding != nil {
		f.cfg.OnFinding(fd)
	}
}

// spacedHex writes hex digits as spaced bytes ("488b05" -> "48 8b 05"), the
// JSON vocabulary's byte form; other text is left as it is.
func spacedHex(h string) string {
	if b, err := jsonv.ParseHex(h); err == nil {
		return jsonv.Hex(b)
	}
	return h
}

// selfDiffers reports whether the in-place case c (keyed by key) differs
// from itself, run once per key and block.
func (f *fuzzCore) selfDiffers(key string, c kernelsim.Case) bool {
	if v, ok := f.nondet[key]; ok {
		return v
	}
	v := f.differs(c)
	f.nondet[key] = v
	return v
}

// differs runs the same in-place case three times and reports whether the
// results differ (a nondeterministic instruction: its divergences do not
// count).
func (f *fuzzCore) differs(c kernelsim.Case) bool {
	cs := []kernelsim.Case{c, c, c}
	rs := make([]kernelsim.Result, 3)
	if err := f.cfg.Backend.Run(cs, rs); err != nil {
		return false
	}
	return f.a.Compare(&rs[0], &rs[1], nil).Verdict != kernelsim.Equivalent || f.a.Compare(&rs[1], &rs[2], nil).Verdict != kernelsim.Equivalent
}

// genRand is a generator's random source, reseedable for each campaign
// block (CaseSource.Seed) within the generator's own stream.
type genRand struct {
	rng    *rand.Rand
	pcg    *rand.PCG
	stream uint64
}

func newGenRand(seed, stream uint64) genRand {
	p := rand.NewPCG(seed, stream)
	return genRand{rng: rand.New(p), pcg: p, stream: stream}
}

// Seed restarts the generator's randomness from s.
func (g *genRand) Seed(s uint64) { g.pcg.Seed(s, g.stream) }
