package vm

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// VerifyRequest is one verification run on any guest architecture (see
// Verifier). Zero values mean the architecture's defaults.
type VerifyRequest struct {
	// Deb is the kernel package to boot; "" means the current Debian package
	// of Verifier.DebianMeta (fetched with kimage.FetchDebianKernel).
	Deb string
	// Build boots a kernel from BuildBoostKernel instead (Verifier.BoostKernel).
	Build *KernelBuild
	// Funcs names functions exactly; Pattern is a glob; Sample picks that many
	// (after Funcs/Pattern, or among all functions up to MaxSize bytes, 0: 512)
	// with a generator seeded by Seed.
	Funcs   []string
	Pattern string
	Sample  int
	Seed    int64
	MaxSize uint64
	// NonBoundary is how many offsets that are not instruction boundaries are
	// tried per function (0: 2; negative: none).
	NonBoundary int
	// Spacing is the least distance between two probes of one function in one
	// round (x86-64 only: Verifier.Spacing).
	Spacing int
	// Boundaries, when positive, probes at most that many instruction
	// boundaries per function, spread over it from the first (where
	// Verifier.Spacing; guest.ThinBoundaries).
	Boundaries int
	// Policy predicts ("" Verifier.DefaultPolicy).
	Policy string
	// VM settings.
	VM Config
	// NoCache boots even when the kernel's record is cached (architectures
	// whose records are cached: Verifier.Cached).
	NoCache bool
	// Uprobes runs the uprobe-trial step in the same boot, after the
	// verification's (architectures with Verifier.UprobeTrials); the report
	// is VerifyOutcome.Uprobes, cached with the record where records are.
	Uprobes *UprobeTrialRequest
}

// VerifyOutcome is a verification's result, whatever the architecture: the
// agreement per compared field and the records behind it.
type VerifyOutcome struct {
	Verifier *Verifier
	Release  string // the booted kernel's release
	Policy   string // the predicting policy ("" when nothing was predicted)
	// Summary counts probes and agreements per field (BoostPredicted and
	// SlotJumpsBack are x86-64 only); Fields are the compared fields in table
	// order.
	Summary VerifySummary
	Fields  []string
	// Cached is the cache file the kernel's record came from ("" when booted).
	Cached string
	// Uprobes is the uprobe-trial report (VerifyRequest.Uprobes; nil when
	// not requested).
	Uprobes *guest.UprobeReport

	table, json func(io.Writer) error
}

// WriteTable prints the agreement table and every disagreement, in the
// architecture's layout.
func (o *VerifyOutcome) WriteTable(w io.Writer) error { return o.table(w) }

// WriteJSON prints one JSON record per probe (guest.VerifyRecord) and then
// a summary object {"summary": {...}, "release", "policy", ...}.
func (o *VerifyOutcome) WriteJSON(w io.Writer) error { return o.json(w) }

// Agrees reports whether every probe that ran agrees on every compared field
// (and at least one ran).
func (o *VerifyOutcome) Agrees() bool {
	return o.Summary.Probes > 0 && o.Summary.AllAgree == o.Summary.Probes
}

// Verifier is the verification scenario of one guest architecture: which
// kernel it boots, what it compares and how.
type Verifier struct {
	Arch *Arch
	// DebianMeta is the Debian meta-package whose current kernel is booted
	// when VerifyRequest.Deb is "".
	DebianMeta string
	// DefaultPolicy predicts when VerifyRequest.Policy is "" and the booted
	// kernel's release is unknown; a known release picks the policy of its
	// version (boost.ForKernel, the nearest older modelled one when not
	// modelled, said in the notes).
	DefaultPolicy string
	// Fields are the compared fields, in table order.
	Fields []string
	// BoostKernel: VerifyRequest.Build (a kernel from BuildBoostKernel) can
	// be booted. Spacing: VerifyRequest.Spacing and Boundaries apply (the
	// recorder plans its probes function by function). Cached: the kernel's
	// record is cached under $KBOOST_CACHE/verify (VerifyRequest.NoCache).
	BoostKernel, Spacing, Cached bool
	// UprobeTrials: VerifyRequest.Uprobes can run in the verification's boot.
	UprobeTrials bool
	// NonBoundary names what VerifyRequest.NonBoundary probes on this
	// architecture.
	NonBoundary string

	run func(context.Context, *Verifier, VerifyRequest) (*VerifyOutcome, error)
}

func (v *Verifier) String() string { return v.Arch.Name }

// Verifiers lists the architectures with a verification scenario.
var Verifiers = []*Verifier{AMD64Verifier, ARM64Verifier, ARMVerifier}

// LookupVerifier finds the Verifier of an architecture by any name
// LookupArch knows ("x86-64", "arm64", "aarch64", "arm", "armhf", ...).
func LookupVerifier(name string) (*Verifier, error) {
	a, err := LookupArch(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %q (want x86-64, arm64 or arm)", ErrUnknownArch, name)
	}
	for _, v := range Verifiers {
		if v.Arch == a {
			return v, nil
		}
	}
	var names []string
	for _, v := range Verifiers {
		names = append(names, v.Arch.Name)
	}
	return nil, fmt.Errorf("%w: no verification scenario for %s (there is one for %s)", ErrUnknownArch, a.Name, strings.Join(names, ", "))
}

// Verify runs the architecture's verification (fetching its Debian kernel
// when req.Deb and req.Build are unset). A request the architecture cannot
// run (a boost kernel, spacing where it does not apply) is an error.
func (v *Verifier) Verify(ctx context.Context, req VerifyRequest) (*VerifyOutcome, error) {
	if req.Build != nil && !v.BoostKernel {
		return nil, fmt.Errorf("vm: no boost-capable kernel for %s (only x86-64 builds one)", v.Arch.Name)
	}
	if req.Spacing != 0 && !v.Spacing {
		return nil, fmt.Errorf("vm: probe spacing applies to x86-64 only (%s probes do not block each other)", v.Arch.Name)
	}
	if req.Boundaries != 0 && !v.Spacing {
		return nil, fmt.Errorf("vm: a bound on boundaries per function applies to x86-64 only (%s records every boundary)", v.Arch.Name)
	}
	if req.Uprobes != nil && !v.UprobeTrials {
		return nil, fmt.Errorf("vm: no uprobe trials in a %s verification (x86-64 and arm64 guests run them)", v.Arch.Name)
	}
	if req.Deb == "" && req.Build == nil {
		deb, err := kimage.FetchDebianKernel(ctx, v.DebianMeta)
		if err != nil {
			return nil, err
		}
		req.Deb = deb
	}
	return v.run(ctx, v, req)
}

// fixedArgs maps a request to the fixed-width recorder's arguments (zero
// values stay zero, so that a request with the defaults finds the records
// cached by the oracle tests).
func fixedArgs(req VerifyRequest) guest.ARM64VerifyArgs {
	return guest.ARM64VerifyArgs{Policy: req.Policy, Funcs: req.Funcs, Pattern: req.Pattern, Sample: req.Sample,
		Seed: req.Seed, MaxSize: req.MaxSize, Misaligned: req.NonBoundary}
}

// FixedSummary is a fixed-width record's summary as every architecture's
// (the same VerifySummary since the one summary: kept for its callers).
func FixedSummary(s *ARM64Summary) VerifySummary { return *s }

func fixedOutcome(v *Verifier, rep *guest.ARM64Report, view *recordView, cached string, table func(io.Writer) error) *VerifyOutcome {
	o := &VerifyOutcome{Verifier: v, Release: rep.Release, Summary: summarizeFixed(rep, view), Fields: view.fields,
		Cached: cached, table: table}
	if rep.Predicted {
		o.Policy = rep.Policy
	}
	o.json = func(w io.Writer) error {
		return writeVerifyJSON(w, view, o.Policy, &rep.VerifyReport, o.Summary, o.Cached)
	}
	return o
}
