package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// The process exit statuses (README.md, "Exit status").
const (
	ExitOK          = 0   // success
	ExitFailure     = 1   // a finding or disagreement, or a runtime failure
	ExitUsage       = 2   // a mistake in how kboost was called
	ExitInterrupted = 130 // stopped by SIGINT or SIGTERM, after the summary
)

// ErrInterrupted is what a long-running command returns, after writing its
// summary, when SIGINT or SIGTERM stopped it.
var ErrInterrupted = errors.New("interrupted")

// ErrFinding is what a command returns, after writing its report, when it
// found something the user asked it to look for (a refuted verdict, an
// unsafe boost, a disagreement with the kernel).
var ErrFinding = errors.New("finding")

// ExitError is an error with the exit status it gives the process; Err
// wraps ErrInterrupted, ErrFinding or the failure itself.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the exit status of the error.
func (e *ExitError) ExitCode() int { return e.Code }

// interrupted is the error of a command stopped by a signal (exit 130).
func interrupted(what string) error {
	return &ExitError{ExitInterrupted, fmt.Errorf("%s: %w (the output above covers the work done)", what, ErrInterrupted)}
}

// tracedStatus is the error of monitor and trace when the command they ran
// ended with a non-zero status: kboost exits with that status (128+N for a
// signal N), as strace does, so a script sees the command fail.
func tracedStatus(what string, status int) error {
	if status == 0 {
		return nil
	}
	return &ExitError{status, fmt.Errorf("%s: the traced command ended with status %d", what, status)}
}

// findingf is the error of a command whose report shows a finding (exit 1).
func findingf(format string, a ...any) error {
	return &ExitError{ExitFailure, fmt.Errorf("%w: %s", ErrFinding, fmt.Sprintf(format, a...))}
}

// UsageError marks a mistake in how kboost was called (exit status 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// ExitCode is ExitUsage.
func (e *UsageError) ExitCode() int { return ExitUsage }

func usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// exitCode maps an error returned by a command to the process exit status.
func exitCode(err error) int {
	var ec interface{ ExitCode() int }
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ec):
		return ec.ExitCode()
	case isCobraUsage(err):
		return ExitUsage
	}
	return ExitFailure
}

// countFlag is an integer flag with an allowed range, as a pflag.Value. It
// takes decimal integers and, for large counts, "1e6"-style and
// "1_000_000" values; a value outside [min, max] is refused with the range
// and an example.
type countFlag struct {
	p        *int
	min, max int
}

// countVar defines a count flag on f.
func countVar(f *pflag.FlagSet, p *int, name, short string, def, min, max int, usage string) {
	*p = def
	f.VarP(&countFlag{p: p, min: min, max: max}, name, short, usage)
}

func (c *countFlag) String() string { return strconv.Itoa(*c.p) }
func (c *countFlag) Type() string   { return "N" }

func (c *countFlag) Set(s string) error {
	v, err := parseCount(s)
	if err != nil {
		return fmt.Errorf("want a whole number from %s to %s (e.g. 1000, 1e6)", fmtCount(c.min), fmtCount(c.max))
	}
	if v < int64(c.min) || v > int64(c.max) {
		return fmt.Errorf("out of range: want %s to %s", fmtCount(c.min), fmtCount(c.max))
	}
	*c.p = int(v)
	return nil
}

// parseCount parses a decimal count: "1000", "1_000", "1e6", "2.5e5".
func parseCount(s string) (int64, error) {
	t := strings.ReplaceAll(s, "_", "")
	if v, err := strconv.ParseInt(t, 10, 64); err == nil {
		return v, nil
	}
	if !strings.ContainsAny(t, "eE") {
		return 0, strconv.ErrSyntax
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, strconv.ErrSyntax
	}
	return int64(f), nil
}

// fmtCount writes a large round count the way users type it (1e9, 5e6).
func fmtCount(v int) string {
	m, e := v, 0
	for m >= 10 && m%10 == 0 {
		m, e = m/10, e+1
	}
	if e >= 6 && m < 10 {
		return fmt.Sprintf("%de%d", m, e)
	}
	return strconv.Itoa(v)
}

// durationFlag is a duration flag with an allowed range; zero is allowed
// when zeroOK (it then means the flag's documented default).
type durationFlag struct {
	p        *time.Duration
	min, max time.Duration
	zeroOK   bool
}

// durationVar defines a duration flag on f.
func durationVar(f *pflag.FlagSet, p *time.Duration, name string, def, min, max time.Duration, zeroOK bool, usage string) {
	*p = def
	f.VarP(&durationFlag{p: p, min: min, max: max, zeroOK: zeroOK}, name, "", usage)
}

func (d *durationFlag) String() string {
	if *d.p == 0 {
		return "0s"
	}
	return d.p.String()
}
func (d *durationFlag) Type() string { return "duration" }

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s or 5m (units ns us ms s m h)")
	}
	if v == 0 && d.zeroOK {
		*d.p = 0
		return nil
	}
	if v < d.min || v > d.max {
		return fmt.Errorf("out of range: want %s to %s", fmtDuration(d.min), fmtDuration(d.max))
	}
	*d.p = v
	return nil
}

// fmtDuration writes d without zero minutes and seconds (720h, 5m, 10s).
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
