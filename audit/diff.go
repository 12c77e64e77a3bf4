package audit

import (
	"context"
	"runtime"
	"slices"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kimage"
)

// Side is one kernel of a diff: the file, the policy it is judged under, the
// environment built from it and its boot-time patcher (nil: none).
type Side struct {
	File   *kimage.File
	Policy *boost.Policy
	Env    *boost.Env
	Patch  *kimage.Patcher
}

// Outcome is what registering a probe at one point gives: the verdict (an
// ftrace site is listed [FTRACE]), the errno of a refusal, whether the probe
// would be jump-optimized ([OPTIMIZED]), and the rules that decided.
type Outcome struct {
	Verdict   boost.Verdict
	Errno     boost.Errno
	Optimized bool
	// Reasons are the rules that decided the verdict; OptReasons those that
	// decided [OPTIMIZED] (why not, or the rule that allowed it).
	Reasons, OptReasons []string
}

// Same reports whether two outcomes are the same to a user of the kernel:
// verdict, errno, [FTRACE] and [OPTIMIZED] (the rules that decided may be
// named differently across versions).
func (o Outcome) Same(p Outcome) bool {
	return o.Verdict == p.Verdict && o.Errno == p.Errno && o.Optimized == p.Optimized
}

// Point is one side's instruction at a matched probe point.
type Point struct {
	Off, Addr uint64
	Bytes     []byte
}

// Change is a probe point, matched in both kernels by function and
// instruction, whose outcome differs.
type Change struct {
	Asm  string // the instruction (A's text)
	A, B Point
	// OutA and OutB are the two outcomes; Rules the rule ids in one side's
	// reasons and not the other's, in A's order then B's.
	OutA, OutB Outcome
	Rules      []string
}

// FuncDiff is the comparison of one function both kernels have.
type FuncDiff struct {
	Func string
	// Matched are the offsets (in A, in B) of the probe points found in both:
	// the same instruction in the same place of the instruction sequence.
	// OnlyA and OnlyB count the points of code that changed between them.
	Matched      [][2]uint64
	OnlyA, OnlyB int
	Changes      []Change
	Err          error // one side could not be audited
}

// maxEdit bounds the edit distance the instruction alignment looks for; a
// function rewritten beyond it is compared as wholly changed code.
const maxEdit = 1024

// CommonFunctions pairs the functions two kernels both have, by name, in A's
// address order (a name defined several times pairs by occurrence).
func CommonFunctions(a, b []Request) [][2]Request {
	byName := map[string][]Request{}
	for _, r := range b {
		byName[r.Sym.Name] = append(byName[r.Sym.Name], r)
	}
	var out [][2]Request
	for _, r := range a {
		if q := byName[r.Sym.Name]; len(q) > 0 {
			out = append(out, [2]Request{r, q[0]})
			byName[r.Sym.Name] = q[1:]
		}
	}
	return out
}

// Diff audits each pair of functions on both sides on all CPUs and hands
// each comparison, in the pairs' order, to each (which must not keep it).
// A function one side cannot audit is reported with Err set. Diff stops at
// ctx's end or each's first error and returns it.
func Diff(ctx context.Context, a, b *Side, pairs [][2]Request, each func(*FuncDiff) error) error {
	workers := runtime.GOMAXPROCS(0)
	newWorker := func() func(int, *FuncDiff) {
		auA, auB := a.Policy.NewAuditor(a.Env), b.Policy.NewAuditor(b.Env)
		fmA, fmB := decode.NewFormatter(0), decode.NewFormatter(0)
		return func(i int, fd *FuncDiff) {
			p := pairs[i]
			*fd = FuncDiff{Func: p[0].Sym.Name}
			fa, err := auditOne(a.File, auA, p[0], a.Patch)
			if err == nil {
				var fb *boost.FuncAudit
				if fb, err = auditOne(b.File, auB, p[1], b.Patch); err == nil {
					diffFunc(fd, fa, fb, fmA, fmB)
				}
			}
			fd.Err = err
		}
	}
	return ordered(len(pairs), workers, workers*4, newWorker, func(fd *FuncDiff) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return each(fd)
	})
}

// diffFunc matches the two audits' instructions and records the points
// whose outcome changed.
func diffFunc(fd *FuncDiff, fa, fb *boost.FuncAudit, fmA, fmB *decode.Formatter) {
	keysA, textA := instKeys(fa, fmA)
	keysB, _ := instKeys(fb, fmB)
	pairs, ok := alignKeys(keysA, keysB, maxEdit)
	if !ok {
		fd.OnlyA, fd.OnlyB = len(keysA), len(keysB)
		return
	}
	fd.OnlyA, fd.OnlyB = len(keysA)-len(pairs), len(keysB)-len(pairs)
	fd.Matched = make([][2]uint64, len(pairs))
	for i, p := range pairs {
		ea, eb := &fa.Entries[p[0]], &fb.Entries[p[1]]
		fd.Matched[i] = [2]uint64{ea.Off, eb.Off}
		oa, ob := outcome(&ea.Decision), outcome(&eb.Decision)
		if oa.Same(ob) {
			continue
		}
		fd.Changes = append(fd.Changes, Change{
			Asm:  textA[p[0]],
			A:    Point{Off: ea.Off, Addr: fa.Func.Addr + ea.Off, Bytes: slices.Clone(ea.Inst.Bytes())},
			B:    Point{Off: eb.Off, Addr: fb.Func.Addr + eb.Off, Bytes: slices.Clone(eb.Inst.Bytes())},
			OutA: oa, OutB: ob, Rules: ruleDelta(append(oa.Reasons, oa.OptReasons...), append(ob.Reasons, ob.OptReasons...)),
		})
	}
}

func outcome(d *boost.Decision) Outcome {
	o := Outcome{Verdict: d.Verdict, Optimized: d.Optimizable}
	if d.Verdict == boost.Reject {
		o.Errno = d.Errno
	}
	for _, r := range d.Reasons {
		o.Reasons = append(o.Reasons, r.Rule)
	}
	for _, r := range d.OptReasons {
		o.OptReasons = append(o.OptReasons, r.Rule)
	}
	return o
}

// ruleDelta lists the rules in one list and not the other.
func ruleDelta(a, b []string) []string {
	var out []string
	for _, r := range a {
		if !slices.Contains(b, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	for _, r := range b {
		if !slices.Contains(a, r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// instKeys gives each boundary of an audit a key that is equal for the same
// instruction in another build of the function: its text with every number
// (addresses, displacements, immediates) replaced, so that code that moved
// or calls a moved function still matches. Also returns the texts.
func instKeys(a *boost.FuncAudit, fm *decode.Formatter) (keys, texts []string) {
	keys, texts = make([]string, len(a.Entries)), make([]string, len(a.Entries))
	var sb strings.Builder
	for i := range a.Entries {
		e := &a.Entries[i]
		t := "(bad)"
		if e.DecodeOK {
			t = fm.Format(&e.Inst)
		}
		texts[i] = t
		sb.Reset()
		for k := 0; k < len(t); k++ {
			// a number starts with a digit where no word goes on
			if c := t[k]; c < '0' || c > '9' || k > 0 && isWordByte(t[k-1]) {
				sb.WriteByte(c)
				continue
			}
			for k+1 < len(t) && isHexByte(t[k+1]) {
				k++
			}
			sb.WriteByte('#')
		}
		keys[i] = sb.String()
	}
	return keys, texts
}

func isHexByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == 'x'
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9'
}

// alignKeys returns the index pairs of a longest common subsequence of a and
// b (Myers' greedy O((N+M)D) algorithm), or false when more than maxD edits
// separate them.
func alignKeys(a, b []string, maxD int) ([][2]int, bool) {
	// Common prefix and suffix first: most functions barely change.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	mid, ok := myers(ma, mb, maxD)
	if !ok {
		return nil, false
	}
	out := make([][2]int, 0, pre+len(mid)+suf)
	for i := 0; i < pre; i++ {
		out = append(out, [2]int{i, i})
	}
	for _, p := range mid {
		out = append(out, [2]int{p[0] + pre, p[1] + pre})
	}
	for i := 0; i < suf; i++ {
		out = append(out, [2]int{len(a) - suf + i, len(b) - suf + i})
	}
	return out, true
}

func myers(a, b []string, maxD int) ([][2]int, bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return nil, true
	}
	limit := min(n+m, maxD)
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int
	for d := 0; d <= limit; d++ {
		trace = append(trace, slices.Clone(v[off-d-1:off+d+2])) // the diagonals step d can read
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m, d), true
			}
		}
	}
	return nil, false
}

// backtrack walks Myers' trace back from (n, m) and collects the diagonal
// (matching) moves; trace[d] is the frontier before step d, diagonals -d-1
// to d+1.
func backtrack(trace [][]int, n, m, dEnd int) [][2]int {
	var out [][2]int
	x, y := n, m
	for d := dEnd; d > 0; d-- {
		v, o := trace[d], d+1
		k := x - y
		pk := k - 1
		if k == -d || k != d && v[o+k-1] < v[o+k+1] {
			pk = k + 1
		}
		px := v[o+pk]
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
			out = append(out, [2]int{x, y})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		out = append(out, [2]int{x, y})
	}
	slices.Reverse(out)
	return out
}
