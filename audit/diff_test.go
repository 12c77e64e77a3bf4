package audit

import (
	"context"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/internal/objdump"
	"github.com/kboost/kboost/kimage"
)

// lcsLen is the textbook dynamic program: the oracle for the alignment's
// length.
func lcsLen(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// The alignment is a common subsequence (increasing, equal keys) as long as
// the dynamic program's, on random edits of random sequences.
func TestAlignKeys(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for n := 0; n < 2000; n++ {
		alpha := 1 + r.Intn(6)
		a := make([]string, r.Intn(40))
		for i := range a {
			a[i] = string(rune('a' + r.Intn(alpha)))
		}
		b := slices.Clone(a)
		for e := r.Intn(8); e > 0; e-- {
			switch i := r.Intn(len(b) + 1); {
			case r.Intn(2) == 0 || i == len(b):
				b = slices.Insert(b, i, string(rune('a'+r.Intn(alpha))))
			default:
				b = slices.Delete(b, i, i+1)
			}
		}
		pairs, ok := alignKeys(a, b, maxEdit)
		if !ok {
			t.Fatalf("%v %v: no alignment", a, b)
		}
		for i, p := range pairs {
			if a[p[0]] != b[p[1]] || i > 0 && (p[0] <= pairs[i-1][0] || p[1] <= pairs[i-1][1]) {
				t.Fatalf("%v / %v: bad pairs %v", a, b, pairs)
			}
		}
		if want := lcsLen(a, b); len(pairs) != want {
			t.Fatalf("%v / %v: %d pairs, LCS %d", a, b, len(pairs), want)
		}
	}
	// beyond the edit bound: refused
	a, b := strings.Split(strings.Repeat("x", 50), ""), strings.Split(strings.Repeat("y", 50), "")
	if _, ok := alignKeys(a, b, 20); ok {
		t.Error("100 edits aligned under a bound of 20")
	}
}

func FuzzAlignKeys(f *testing.F) {
	f.Add("abcabba", "cbabac")
	f.Fuzz(func(t *testing.T, x, y string) {
		if len(x) > 64 || len(y) > 64 {
			return
		}
		a, b := strings.Split(x, ""), strings.Split(y, "")
		pairs, ok := alignKeys(a, b, maxEdit)
		if !ok || len(pairs) != lcsLen(a, b) {
			t.Fatalf("%q %q: %v %v", x, y, pairs, ok)
		}
	})
}

// Two builds of the same functions, the second with statements added: every
// matched point is the same instruction in both builds by objdump's reading
// (mnemonic and operands with numbers set aside), the added code stays
// unmatched, and one policy on both builds changes nothing.
func TestDiffAlignsBuilds(t *testing.T) {
	dir := t.TempDir()
	src := func(extra string) string {
		return `
volatile long sink;
long walk(long *p, long n) {
	long s = 0;
	` + extra + `
	for (long i = 0; i < n; i++) {
		s += p[i] * 3;
		if (s > 1000)
			sink = s;
	}
	return s;
}
long twice(long x) { ` + extra + ` return walk(&x, 1) * 2; }
int main(void) { long a[4] = {1, 2, 3, 4}; return (int)walk(a, 4) + (int)twice(5); }
`
	}
	build := func(name, extra string) string {
		c, bin := filepath.Join(dir, name+".c"), filepath.Join(dir, name)
		if err := os.WriteFile(c, []byte(src(extra)), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("gcc", "-O2", "-fno-inline", "-o", bin, c).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
		return bin
	}
	binA := build("a", "")
	binB := build("b", "sink = sink + 7; sink = sink * 5;")
	side := func(bin string) (*Side, []Request, map[uint64]string) {
		f, err := kimage.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		pol, err := boost.Lookup("uprobes-x86")
		if err != nil {
			t.Fatal(err)
		}
		env, _ := Env(f, pol, nil)
		reqs, err := Select(f, []string{"walk", "twice"})
		if err != nil {
			t.Fatal(err)
		}
		text := map[uint64]string{}
		err = objdump.Run(context.Background(), bin, objdump.Config{Intel64: true, Sections: []string{".text"}}, func(r *objdump.Record) error {
			text[r.Addr] = numberless(r.Text)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return &Side{File: f, Policy: pol, Env: env}, reqs, text
	}
	a, reqsA, textA := side(binA)
	b, reqsB, textB := side(binB)
	pairs := CommonFunctions(reqsA, reqsB)
	if len(pairs) != 2 {
		t.Fatalf("%d common functions, want walk and twice", len(pairs))
	}
	err := Diff(context.Background(), a, b, pairs, func(fd *FuncDiff) error {
		var p [2]Request
		for _, q := range pairs {
			if q[0].Sym.Name == fd.Func {
				p = q
			}
		}
		if fd.Err != nil || len(fd.Changes) != 0 || fd.OnlyB == 0 || len(fd.Matched) < 4 {
			t.Errorf("%s: err %v, %d changes, %d matched, %d only in B (want: no change, added code unmatched)", fd.Func, fd.Err, len(fd.Changes), len(fd.Matched), fd.OnlyB)
		}
		for _, m := range fd.Matched {
			ta, tb := textA[p[0].Sym.Addr+m[0]], textB[p[1].Sym.Addr+m[1]]
			if ta == "" || ta != tb {
				t.Errorf("%s: +%#x %q matched with +%#x %q", fd.Func, m[0], ta, m[1], tb)
			}
		}
		t.Logf("%s: %d points matched, %d only in A, %d only in B", fd.Func, len(fd.Matched), fd.OnlyA, fd.OnlyB)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// numberless is objdump's instruction text with numbers and the symbol
// annotations of branch targets set aside.
func numberless(s string) string {
	if i := strings.IndexByte(s, '<'); i >= 0 {
		s = s[:i]
	}
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '(' || r == ')' })
	for i, w := range f {
		if w != "" && (w[0] >= '0' && w[0] <= '9' || w[0] == '$' || w[0] == '-') {
			f[i] = "#"
		}
	}
	return strings.Join(f, " ")
}
