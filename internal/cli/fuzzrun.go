package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/kboost/kboost/internal/campaign"
	"github.com/kboost/kboost/internal/shard"
	"github.com/kboost/kboost/kernelsim/fuzz"
	"github.com/spf13/cobra"
)

// campaignFlags are the fuzz flags a findings file's header records: a
// resumed campaign takes them from the header.
func campaignFlags(h *campaign.Header) [][2]string {
	return [][2]string{
		{"arch", h.Arch}, {"policy", h.Policy}, {"seed", strconv.FormatUint(h.Seed, 10)}, {"trials", strconv.Itoa(h.Trials)},
		{"n", strconv.Itoa(h.Cases)}, {"shard", h.Shard}, {"case-timeout", h.CaseTimeout},
	}
}

// loadResume reads the findings file of `fuzz --resume` and sets the
// campaign's flags from its header; a flag given with another value is a
// usage mistake.
func loadResume(cmd *cobra.Command, path string) (*campaign.State, error) {
	st, err := campaign.Load(path)
	if err != nil {
		return nil, err
	}
	h := &st.Header
	switch {
	case len(h.Merged) > 0:
		return nil, usagef("--resume %s: a merged file (shards %v) cannot be resumed; resume each shard's own file", path, h.Merged)
	case h.BlockSize != fuzz.BlockSize:
		return nil, fmt.Errorf("--resume %s: blocks of %d cases, this kboost runs blocks of %d", path, h.BlockSize, fuzz.BlockSize)
	}
	for _, fv := range campaignFlags(h) {
		fl := cmd.Flags().Lookup(fv[0])
		if fl.Changed && fl.Value.String() != fv[1] {
			return nil, usagef("--%s %s: the campaign in %s has --%s %s (leave the flag out when resuming)", fv[0], fl.Value.String(), path, fv[0], fv[1])
		}
		if fv[1] != "" {
			if err := fl.Value.Set(fv[1]); err != nil {
				return nil, fmt.Errorf("%s: campaign header: --%s %q: %v", path, fv[0], fv[1], err)
			}
		}
	}
	if h.Cases == 0 && !cmd.Flags().Changed("duration") {
		return nil, usagef("--resume %s: the campaign has no case count (-n): give --duration", path)
	}
	return st, nil
}

// fuzzRun is one run of a campaign's blocks.
type fuzzRun struct {
	fz       fuzz.Engine
	sb       fuzz.Backend
	n        int           // the campaign's cases (0: until dur)
	dur      time.Duration // 0: until n
	shard    shard.Shard
	next     uint64 // the first block to run
	out      *campaign.Writer
	every    time.Duration // checkpoint interval
	quiet    bool
	progress bool
	errw     io.Writer
}

// run runs the shard's blocks from r.next until the campaign's cases, the
// duration or ctx end, with a checkpoint every r.every and at the end.
func (r *fuzzRun) run(ctx context.Context) error {
	start, last, lastCP := time.Now(), time.Now(), time.Now()
	// checks per CPU-second (tracer and sandbox together: one core's
	// worth, since they take turns) next to the wall-clock rate
	cpuRate := func(checks int) string { return "" }
	if c, ok := r.sb.(interface{ CPUTime() time.Duration }); ok {
		cpu0 := c.CPUTime()
		cpuRate = func(checks int) string {
			if d := (c.CPUTime() - cpu0).Seconds(); d > 0 {
				return fmt.Sprintf(", %.0f per CPU-second", float64(checks)/d)
			}
			return ""
		}
	}
	const bs = fuzz.BlockSize
	b := r.shard.First(r.next)
	dirty := false // blocks run since the last checkpoint
	done := func() error {
		if r.out != nil && dirty {
			dirty = false
			return r.out.Checkpoint(b, r.fz.Counts())
		}
		return nil
	}
	cases0, checks0 := r.fz.Counts().Cases, r.fz.Counts().Checks
	for {
		if ctx.Err() != nil || (r.n > 0 && b*bs >= uint64(r.n)) || (r.dur > 0 && time.Since(start) >= r.dur) {
			break
		}
		k := bs
		if r.n > 0 && uint64(r.n)-b*bs < bs {
			k = int(uint64(r.n) - b*bs)
		}
		r.fz.Seek(b)
		if err := r.fz.Block(k); err != nil {
			if ctx.Err() != nil {
				break // the block is run again on resume
			}
			return err
		}
		b, dirty = r.shard.First(b+1), true
		if r.out != nil && time.Since(lastCP) >= r.every {
			lastCP = time.Now()
			if err := done(); err != nil {
				return err
			}
		}
		st := r.fz.Counts()
		el := time.Since(start).Seconds()
		cases, checks := st.Cases-cases0, st.Checks-checks0
		if !r.progress && !r.quiet && time.Since(last) > 30*time.Second {
			last = time.Now()
			fmt.Fprintf(r.errw, "%s: %d cases, %d checks (%.0f/s%s): unsafe %d, kernel divergences %d, missed %d, length errors %d\n",
				time.Since(start).Round(time.Second), st.Cases, st.Checks, float64(checks)/el, cpuRate(checks), st.UnsafeBoosts, st.PolicyDivergences, st.MissedBoosts, st.LengthErrors)
		}
		if r.progress && time.Since(last) > 500*time.Millisecond {
			last = time.Now()
			fmt.Fprintf(r.errw, "\r%d cases (%.0f/s), %d checks (%.0f/s%s): unsafe %d, kernel divergences %d, missed %d, length errors %d  ",
				st.Cases, float64(cases)/el, st.Checks, float64(checks)/el, cpuRate(checks), st.UnsafeBoosts, st.PolicyDivergences, st.MissedBoosts, st.LengthErrors)
		}
	}
	if r.progress {
		fmt.Fprint(r.errw, "\r\033[K")
	}
	return done()
}
