package uprobe

import (
	"os"
	"testing"

	"github.com/kboost/kboost/internal/kernelref"
)

// placeCodes are functions of one basic block (straight-line code ending in
// ret) that may run in a loop: RIP-relative lea (single-stepped everywhere),
// push/pop (emulated), the NOP forms kernels optimize or emulate, register
// moves.
var placeCodes = []string{
	"48 8d 05 00 00 00 00 0f 1f 44 00 00 66 2e 0f 1f 84 00 00 00 00 00 55 5d c3",
	"48 8d 05 00 00 00 00 55 5d 66 2e 0f 1f 84 00 00 00 00 00 c3",
	"48 89 c8 48 8d 05 00 00 00 00 0f 1f 44 00 00 48 89 c8 c3",
	"48 8d 05 00 00 00 00 66 0f 1f 44 00 00 90 48 89 c8 c3",
	"48 89 c8 48 8d 05 00 00 00 00 66 2e 0f 1f 84 00 00 00 00 00 0f 1f 44 00 00 c3",
}

// kernelCost ranks what a kernel did at a site: 0 optimized, 1 emulated,
// 2 single-stepped, refused last.
func kernelCost(path string) int {
	switch path {
	case "optimized":
		return 0
	case "emulated":
		return 1
	case "singlestep":
		return 2
	}
	return 1 << 20
}

// checkCheapest holds Cheapest under k to the kernel's own costs: from every
// boundary of each placeCodes function, the site chosen must be one of the
// kernel's cheapest from there to the ret (kernelPath says what the kernel
// does at a site of that function; the functions have no hazards, so every
// site may be chosen). It returns the number of starting points checked.
func checkCheapest(t *testing.T, k *Kernel, kernelPath func(code []byte, fa *FuncAudit, s *Site) string) int {
	t.Helper()
	n := 0
	for _, h := range placeCodes {
		code := hexBytes(t, h)
		fa := auditBytes(t, k, code)
		cost := make([]int, len(fa.Sites))
		paths := make([]string, len(fa.Sites))
		for i := range fa.Sites {
			paths[i] = kernelPath(code, fa, &fa.Sites[i])
			cost[i] = kernelCost(paths[i])
		}
		for i := range fa.Sites {
			best := cost[i]
			for j := i; j < len(fa.Sites); j++ {
				best = min(best, cost[j])
			}
			s, why, err := Cheapest(fa, fa.Sites[i].Off)
			if err != nil {
				t.Fatal(err)
			}
			j := -1
			for x := range fa.Sites {
				if fa.Sites[x].Off == s.Off {
					j = x
				}
			}
			n++
			if j < i || cost[j] != best {
				t.Errorf("%s: %s: from +%#x placed at +%#x (%s, the kernel: %s); the kernel's cheapest from there costs %d (kernel paths %v)",
					k.Name, h, fa.Sites[i].Off, s.Off, s.Path, paths[max(j, 0)], best, paths)
			} else if testing.Verbose() {
				t.Logf("%s: %s: from +%#x: %s", k.Name, h, fa.Sites[i].Off, why)
			}
		}
	}
	return n
}

// kernelrefOracle opens the kernel-code oracle of version v (KBOOST_ORACLE=1:
// the kernel's arch_uprobe_analyze_insn and can_optimize compiled from
// Debian's linux-source-v).
func kernelrefOracle(t *testing.T, v string) *kernelref.Oracle {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 to run the kernel-code oracle")
	}
	o, err := kernelref.Open(kernelref.Options{Version: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// refPath is what version's compiled uprobes code does at an address with
// these bytes (padded with int3): refused, optimized (can_optimize),
// emulated (branch or push ops) or single-stepped.
func refPath(t *testing.T, o *kernelref.Oracle, b []byte, addr uint64) string {
	t.Helper()
	win := append([]byte(nil), b...)
	for len(win) < 16 {
		win = append(win, 0xcc)
	}
	u, err := o.UprobeAt(64, win[:16], addr)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case u.Ret != 0:
		return "refused " + u.Errno
	case u.Optimize:
		return "optimized"
	case u.Ops == "branch" || u.Ops == "push":
		return "emulated"
	}
	return "singlestep"
}

// --place cheapest under uprobes-7.2 and uprobes-6.12, held to each
// version's own code: 7.2 optimizes only the 10-byte NOP (5-byte NOPs are
// emulated), 6.12 optimizes nothing.
func TestOracleCheapest72(t *testing.T) { oracleCheapest(t, "uprobes-7.2", "7.2") }

func TestOracleCheapest612(t *testing.T) { oracleCheapest(t, "uprobes-6.12", "6.12") }

func oracleCheapest(t *testing.T, model, v string) {
	o := kernelrefOracle(t, v)
	k, err := Lookup(model)
	if err != nil {
		t.Fatal(err)
	}
	n := checkCheapest(t, k, func(code []byte, fa *FuncAudit, s *Site) string {
		return refPath(t, o, code[s.Off:], uint64(s.Addr))
	})
	t.Logf("%s: %d starting points in %d functions, each placed at one of %s's cheapest sites", model, n, len(placeCodes), v)
}

// uprobe bench's optimized row on 7.2 and 6.12: BenchNop is the first NOP
// form the version's code optimizes at the workload's address (7.2: the
// 10-byte form), none on 6.12.
func TestOracleBenchNop(t *testing.T) {
	for _, c := range []struct{ model, v string }{{"uprobes-7.2", "7.2"}, {"uprobes-6.12", "6.12"}} {
		o := kernelrefOracle(t, c.v)
		k, err := Lookup(c.model)
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		for _, nop := range benchNops {
			if refPath(t, o, append(append([]byte(nil), nop...), 0xc3), benchBase+BenchFuncOffset(1)) == "optimized" && want == nil {
				want = nop
			}
		}
		got, ok := BenchNop(k)
		if ok != (want != nil) || ok && SpacedHex(got) != SpacedHex(want) {
			t.Errorf("%s: BenchNop %s (optimized %v); the kernel's code optimizes %s first", c.model, SpacedHex(got), ok, SpacedHex(want))
		}
		t.Logf("%s: bench's optimized row probes %s (optimized by %s: %v)", c.model, SpacedHex(got), c.v, ok)
	}
}
