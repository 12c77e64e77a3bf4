package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/kboost/kboost/audit"
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/internal/recordio"
	"github.com/kboost/kboost/internal/shard"
	"github.com/spf13/cobra"
)

type diffOpts struct {
	auditOpts
	policies string
	symbols  string
}

func newDiffCmd(s Streams) *cobra.Command {
	var o diffOpts
	cmd := &cobra.Command{
		Use:   "diff [A [B]]",
		Short: "Probe points whose outcome changed between two kernels (or two policies on one)",
		Long: `Audit every function two kernels both have and list the probe points whose
verdict, errno, [FTRACE] or [OPTIMIZED] changed, then a summary per change and
per rule. Points are matched by function and instruction, not by offset: the
instructions of the two builds of a function are aligned (numbers such as
addresses and displacements do not count), so a point keeps its match when
code before it moved.

A and B are files as 'kboost audit' reads them (vmlinux, Debian .deb,
vmlinuz, Image with --symbols), each judged under the policy of its own
kernel version. With one file, --policy P1,P2 compares two policies on it;
without a file, on kboost's embedded demo program.

Exit status 0 whatever changed (a change is not a kboost finding), 2 for bad
input, 130 when interrupted.`,
		Example: `  kboost diff linux-image-6.1.0-NN-amd64_*.deb linux-image-6.12.NN+deb12-amd64_*.deb --summary
  kboost diff vmlinux --symbols System.map --policy linux-6.1,linux-6.12
  kboost diff a.deb b.deb --func 'vfs_*' --json`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(s, o, args)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&o.funcs, "func", nil, "function NAME or glob (\"vfs_*\"); repeatable (default: every function)")
	fl.StringVar(&o.symbols, "symbols", "", "symbol files (System.map or kallsyms) for A and B: FILE or FILE_A,FILE_B")
	fl.StringVar(&o.policies, "policy", "", "policies for A and B: P (both) or P1,P2; default: each kernel's version")
	ynVar(fl, &o.preempt, "preemption", preemptionUsage+" (both kernels)")
	fl.StringVar(&o.returns, "returns", "thunk", "return thunks at run time on both: thunk or ret (see 'kboost audit')")
	fl.BoolVar(&o.jsonOut, "json", false, "one JSON object per changed point, then the summary")
	fl.BoolVar(&o.summary, "summary", false, "only the summary")
	o.cpuCaps = "none"
	return cmd
}

// pair splits "X" or "X,Y" into the values for A and B.
func pair(flag, v string) (a, b string, err error) {
	switch p := strings.Split(v, ","); len(p) {
	case 1:
		return p[0], p[0], nil
	case 2:
		return p[0], p[1], nil
	default:
		return "", "", usagef("--%s %q: want one value or two, comma-separated", flag, v)
	}
}

func runDiff(s Streams, o diffOpts, args []string) error {
	for _, sel := range o.funcs {
		if strings.Contains(sel, "+") {
			return usagef("--func %q: diff compares whole functions: give NAME or a glob", sel)
		}
	}
	polA, polB, err := pair("policy", o.policies)
	if err != nil {
		return err
	}
	symA, symB, err := pair("symbols", o.symbols)
	if err != nil {
		return err
	}
	fileA, fileB := "", "" // the embedded demo
	if len(args) > 0 {
		fileA, fileB = args[0], args[0]
	}
	if len(args) == 2 {
		fileB = args[1]
	} else if polA == polB {
		return usagef("one file: give two policies to compare (--policy P1,P2), or a second file")
	}
	oa, ob := o.auditOpts, o.auditOpts
	oa.symsPath, ob.symsPath = symA, symB
	a, err := prepareAudit(oa, fileA, polA, shard.Shard{})
	if err != nil {
		return err
	}
	defer a.f.Close()
	b, err := prepareAudit(ob, fileB, polB, shard.Shard{})
	if err != nil {
		return err
	}
	defer b.f.Close()
	if a.f.Arch != b.f.Arch {
		return usagef("%s is %s code and %s is %s: diff compares kernels of one architecture", fileA, a.f.Arch.Name, fileB, b.f.Arch.Name)
	}
	pairs := audit.CommonFunctions(a.reqs, b.reqs)
	sum := newDiffSummary(len(a.reqs), len(b.reqs), len(pairs))
	w := recordio.NewWriter(s.Out, 1<<16)
	defer w.Flush()
	hdr := diffHeader{Arch: a.f.Arch.Name, A: diffSide{File: a.f.Path, Policy: a.pol.Name, Notes: a.notes}, B: diffSide{File: b.f.Path, Policy: b.pol.Name, Notes: b.notes}}
	if !o.jsonOut {
		hdr.writeText(w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	prog := newProgress(s.Err, "diff")
	var buf []byte
	err = audit.Diff(ctx, &audit.Side{File: a.f, Policy: a.pol, Env: a.env, Patch: a.patch},
		&audit.Side{File: b.f, Policy: b.pol, Env: b.env, Patch: b.patch}, pairs,
		func(fd *audit.FuncDiff) error {
			sum.add(fd)
			prog.update(uint64(sum.Compared), uint64(len(pairs)))
			if o.summary {
				return nil
			}
			buf = buf[:0]
			if fd.Err != nil && !o.jsonOut {
				buf = fmt.Appendf(buf, "# error: %v\n", fd.Err)
			}
			for i := range fd.Changes {
				buf = appendChange(buf, &hdr, fd.Func, &fd.Changes[i], o.jsonOut)
			}
			_, err := w.Write(buf)
			return err
		})
	prog.finish()
	stopped := errors.Is(err, context.Canceled)
	if err != nil && !stopped {
		return err
	}
	sum.Header = hdr
	if o.jsonOut {
		err = sum.writeJSON(w)
	} else {
		err = sum.writeText(w)
	}
	if err != nil {
		return err
	}
	if stopped {
		if err := w.Flush(); err != nil {
			return err
		}
		return interrupted(fmt.Sprintf("diff: %d of %d functions compared", sum.Compared, len(pairs)))
	}
	return w.Flush()
}

type diffSide struct {
	File   string   `json:"file"`
	Policy string   `json:"policy"`
	Notes  []string `json:"notes,omitempty"`
}

type diffHeader struct {
	Arch string   `json:"arch"`
	A    diffSide `json:"a"`
	B    diffSide `json:"b"`
}

func (h *diffHeader) writeText(w io.Writer) {
	fmt.Fprintf(w, "# %s\n# A: %s, policy %s\n", h.Arch, h.A.File, h.A.Policy)
	for _, n := range h.A.Notes {
		fmt.Fprintf(w, "#    note: %s\n", n)
	}
	fmt.Fprintf(w, "# B: %s, policy %s\n", h.B.File, h.B.Policy)
	for _, n := range h.B.Notes {
		fmt.Fprintf(w, "#    note: %s\n", n)
	}
}

// outcomeText is an outcome as the audit listing writes it: the verdict, the
// errno of a refusal, +opt for a jump-optimized probe.
func outcomeText(o audit.Outcome) string {
	t := o.Verdict.String()
	if o.Verdict == boost.Reject {
		t += " " + o.Errno.String()
	}
	if o.Optimized {
		t += " +opt"
	}
	return t
}

func appendOutcomeJSON(buf []byte, policy string, p audit.Point, o audit.Outcome) []byte {
	buf = append(buf, `{"policy":`...)
	buf = strconv.AppendQuote(buf, policy)
	buf = append(buf, `,"off":"0x`...)
	buf = strconv.AppendUint(buf, p.Off, 16)
	buf = append(buf, `","addr":"0x`...)
	buf = strconv.AppendUint(buf, p.Addr, 16)
	buf = append(buf, `","bytes":"`...)
	buf = appendHexBytes(buf, p.Bytes)
	buf = append(buf, `","verdict":"`...)
	buf = append(buf, o.Verdict.String()...)
	buf = append(buf, '"')
	if o.Verdict == boost.Reject {
		buf = append(buf, `,"errno":"`...)
		buf = append(buf, o.Errno.String()...)
		buf = append(buf, '"')
	}
	buf = append(buf, `,"optimizable":`...)
	buf = strconv.AppendBool(buf, o.Optimized)
	buf = append(buf, `,"reasons":`...)
	buf = appendJSONStrings(buf, o.Reasons)
	buf = append(buf, `,"opt_reasons":`...)
	buf = appendJSONStrings(buf, o.OptReasons)
	return append(buf, '}')
}

func appendChange(buf []byte, h *diffHeader, fn string, c *audit.Change, jsonOut bool) []byte {
	if jsonOut {
		buf = append(buf, `{"arch":`...)
		buf = strconv.AppendQuote(buf, h.Arch)
		buf = append(buf, `,"func":`...)
		buf = strconv.AppendQuote(buf, fn)
		buf = append(buf, `,"asm":`...)
		buf = strconv.AppendQuote(buf, c.Asm)
		buf = append(buf, `,"a":`...)
		buf = appendOutcomeJSON(buf, h.A.Policy, c.A, c.OutA)
		buf = append(buf, `,"b":`...)
		buf = appendOutcomeJSON(buf, h.B.Policy, c.B, c.OutB)
		buf = append(buf, `,"reasons":`...)
		buf = appendJSONStrings(buf, c.Rules)
		return append(buf, "}\n"...)
	}
	at := fmt.Sprintf("%s+%#x", fn, c.A.Off)
	if c.B.Off != c.A.Off {
		at += fmt.Sprintf("/+%#x", c.B.Off)
	}
	return fmt.Appendf(buf, "%-40s %-34s %-18s -> %-18s %s\n", at, c.Asm, outcomeText(c.OutA), outcomeText(c.OutB), strings.Join(c.Rules, " "))
}

// diffSummary counts what changed.
type diffSummary struct {
	Header diffHeader `json:"header"`
	// FuncsA and FuncsB are the functions of each kernel, Compared those both
	// have (Errors of them could not be audited on one side).
	FuncsA   int `json:"funcs_a"`
	FuncsB   int `json:"funcs_b"`
	Compared int `json:"compared"`
	Errors   int `json:"errors"`
	// Matched points are the same instruction in both; OnlyA and OnlyB
	// those of code that changed.
	Matched     int            `json:"matched"`
	OnlyA       int            `json:"only_a"`
	OnlyB       int            `json:"only_b"`
	Changed     int            `json:"changed"`
	Transitions map[string]int `json:"transitions"`
	Rules       map[string]int `json:"rules"`
	pairs       int
}

func newDiffSummary(a, b, pairs int) *diffSummary {
	return &diffSummary{FuncsA: a, FuncsB: b, pairs: pairs, Transitions: map[string]int{}, Rules: map[string]int{}}
}

func (s *diffSummary) add(fd *audit.FuncDiff) {
	s.Compared++
	if fd.Err != nil {
		s.Errors++
		return
	}
	s.Matched += len(fd.Matched)
	s.OnlyA += fd.OnlyA
	s.OnlyB += fd.OnlyB
	s.Changed += len(fd.Changes)
	for i := range fd.Changes {
		c := &fd.Changes[i]
		s.Transitions[outcomeText(c.OutA)+" -> "+outcomeText(c.OutB)]++
		for _, r := range c.Rules {
			s.Rules[r]++
		}
	}
}

func (s *diffSummary) writeJSON(w io.Writer) error {
	b, err := json.Marshal(struct {
		Record string `json:"record"`
		*diffSummary
	}{"summary", s})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func (s *diffSummary) writeText(w io.Writer) error {
	pct := 0.0
	if s.Matched > 0 {
		pct = 100 * float64(s.Changed) / float64(s.Matched)
	}
	fmt.Fprintf(w, "\nfunctions: %d in A, %d in B, %d in both compared", s.FuncsA, s.FuncsB, s.Compared)
	if s.Errors > 0 {
		fmt.Fprintf(w, " (%d could not be audited)", s.Errors)
	}
	fmt.Fprintf(w, "\nprobe points: %d matched (%d only in A, %d only in B: code that changed), %d changed (%.2f%%)\n", s.Matched, s.OnlyA, s.OnlyB, s.Changed, pct)
	for _, kv := range byCount(s.Transitions) {
		fmt.Fprintf(w, "  %8d  %s\n", kv.n, kv.k)
	}
	if len(s.Rules) > 0 {
		fmt.Fprintf(w, "rules in one side's reasons only:\n")
		for _, kv := range byCount(s.Rules) {
			fmt.Fprintf(w, "  %8d  %s\n", kv.n, kv.k)
		}
	}
	return nil
}

type keyCount struct {
	k string
	n int
}

// byCount orders a count map by count, then key.
func byCount(m map[string]int) []keyCount {
	out := make([]keyCount, 0, len(m))
	for k, n := range m {
		out = append(out, keyCount{k, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].k < out[j].k
	})
	return out
}
