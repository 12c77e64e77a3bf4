package boost_test

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/kernelref"
)

// The golden tables hold the kernel's own answers (see internal/kernelref, which
// compiles the kprobes code of the kernel source and regenerates them); these
// tests hold kboost's policies to them.

func readGolden(t *testing.T, path string) *kernelref.Table {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := kernelref.ReadTable(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(tab.Rows) == 0 {
		t.Fatalf("%s: no rows", path)
	}
	return tab
}

// goldenEnv is the kboost environment for a row: its configuration, slot address
// and (for "extable") an exception-table entry at the probe address.
func goldenEnv(p *boost.Policy, r *kernelref.Row) *boost.Env {
	env := p.DefaultEnv()
	env.Config.Preemption = r.Preemption
	env.Config.PostHandler = r.Post
	env.SlotAddr = r.SlotAddr()
	if r.Extable {
		env.Sites = &boost.StaticSites{ExTableAddrs: boost.NewAddrTable([]uint64{r.ProbeAddr()})}
	}
	return env
}

// opKey names the opcode of a byte string: its bytes after legacy prefixes and
// REX, through the opcode (and the VEX/EVEX/XOP escape byte alone).
func opKey(buf []byte) string {
	i := 0
	for i < len(buf) && decode.PrefixOf(buf[i]) != 0 {
		i++
	}
	if i < len(buf) && buf[i]&0xF0 == 0x40 {
		i++
	}
	end := i + 1
	switch {
	case i+2 < len(buf) && buf[i] == 0x0F && (buf[i+1] == 0x38 || buf[i+1] == 0x3A):
		end = i + 3
	case i+1 < len(buf) && buf[i] == 0x0F:
		end = i + 2
	}
	return fmt.Sprintf("% x", buf[i:min(end, len(buf))])
}

func goldenMode(r *kernelref.Row) decode.Mode {
	if r.Bits == 32 {
		return decode.Mode32
	}
	return decode.Mode64
}

// classifyRow classifies the row's bytes at the probe address the way the
// kernel reads them; a row with PRE bytes is audited as a function (can_probe's
// walk from the function start) and decided at the probe's offset.
func classifyRow(p *boost.Policy, r *kernelref.Row) (boost.Decision, error) {
	env := goldenEnv(p, r)
	if len(r.Pre) == 0 {
		return p.ClassifyBytesEnv(r.Window(), goldenMode(r), r.ProbeAddr(), env), nil
	}
	env.Mode = goldenMode(r)
	text := r.Text()
	a, err := p.AuditFunc(boost.Func{Name: "golden", Addr: r.ProbeAddr() - uint64(len(r.Pre)), Bytes: text}, env)
	if err != nil {
		return boost.Decision{}, err
	}
	return a.At(uint64(len(r.Pre)))
}

// got renders a decision in the golden WANT vocabulary.
func gotWant(d boost.Decision) kernelref.Want {
	w := kernelref.Want{Verdict: d.Verdict.String(), Len: d.Len}
	if d.Verdict == boost.Reject {
		w.Errno = d.Errno.String()
	}
	return w
}

func sameVerdict(want, got kernelref.Want) bool {
	return want.Verdict == got.Verdict && want.Errno == got.Errno
}

func TestGoldenLinux61(t *testing.T) { goldenKprobes(t, "linux-6.1", "testdata/linux-6.1.golden") }

// linux-6.12 against Debian's 6.12.117 source: its rules and its decoder (REX2,
// the grown 0F 38 map) on every row.
func TestGoldenLinux612(t *testing.T) { goldenKprobes(t, "linux-6.12", "testdata/linux-6.12.golden") }

// linux-7.2 against Debian's 7.2.13 source (unstable): XOP and the i64 opcodes.
func TestGoldenLinux72(t *testing.T) { goldenKprobes(t, "linux-7.2", "testdata/linux-7.2.golden") }

// goldenKprobes holds policy name to a kprobes golden table: verdict, errno,
// decoder length, emulation and slot bytes on every row.
func goldenKprobes(t *testing.T, name, path string) {
	p, err := boost.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	tab := readGolden(t, path)
	var bad, badLen, badSlot int
	var report strings.Builder
	for i := range tab.Rows {
		r := &tab.Rows[i]
		d, err := classifyRow(p, r)
		if err != nil {
			bad++
			fmt.Fprintf(&report, "line %d: %s\n\tkboost: %v\n", r.Line, r, err)
			continue
		}
		got := gotWant(d)
		if !sameVerdict(r.Want, got) {
			bad++
			fmt.Fprintf(&report, "line %d: %s\n\tkernel: %s\n\tkboost: %s (reasons %v)\n",
				r.Line, r, r.Want, got, d.ReasonIDs())
			continue
		}
		if r.Want.Len > 0 && d.Len != r.Want.Len {
			badLen++
			fmt.Fprintf(&report, "line %d: %s\n\tkernel decoder length %d, kboost's kernel view %d\n",
				r.Line, r, r.Want.Len, d.Len)
			continue
		}
		if r.Want.Verdict == "reject" {
			continue
		}
		if d.Emulated != (r.Want.Emulate != "") {
			badSlot++
			fmt.Fprintf(&report, "line %d: %s\n\tkernel emulate_op %q, kboost Emulated %v\n",
				r.Line, r, r.Want.Emulate, d.Emulated)
		} else if !bytes.Equal(d.SlotBytes(), r.Want.Slot) {
			badSlot++
			fmt.Fprintf(&report, "line %d: %s\n\tkernel slot % x\n\tkboost slot % x\n",
				r.Line, r, r.Want.Slot, d.SlotBytes())
		}
	}
	t.Logf("%d rows, %d verdict disagreements, %d length disagreements, %d emulation/slot disagreements",
		len(tab.Rows), bad, badLen, badSlot)
	if bad+badLen+badSlot > 0 {
		t.Errorf("%s disagrees with the kernel on %d rows:\n%s", name, bad+badLen+badSlot, report.String())
	}
}

// The kernel's code itself, run live (KBOOST_ORACLE=1), on far more inputs than
// the table: every opcode of every map after each prefix with several operand
// forms, and random byte strings, in both kernels (x86-64 and i386) of each
// version.
func TestOracleLinux61Sample(t *testing.T) { oracleSample(t, "linux-6.1", "6.1") }

func TestOracleLinux612Sample(t *testing.T) { oracleSample(t, "linux-6.12", "6.12") }

func TestOracleLinux72Sample(t *testing.T) { oracleSample(t, "linux-7.2", "7.2") }

func oracleSample(t *testing.T, name, version string) {
	o, p := versionOracle(t, name, version)
	n, bad := 0, 0
	classes := map[string]int{}
	var examples []string
	for _, bits := range []int{64, 32} {
		for _, buf := range kernelref.DecoderSample(bits, 2, 20000) {
			r := kernelref.Row{Insn: buf, Bits: bits}
			res, err := o.Kprobe(r.Kprobe())
			if err != nil {
				t.Fatal(err)
			}
			want := kernelref.Want{Verdict: res.Verdict(), Errno: res.Errno, Len: res.Len, Slot: res.Slot}
			d, err := classifyRow(p, &r)
			if err != nil {
				t.Fatal(err)
			}
			got := gotWant(d)
			got.Slot = d.SlotBytes()
			n++
			if sameVerdict(want, got) && (want.Len == 0 || got.Len == want.Len) &&
				(want.Verdict == "reject" || bytes.Equal(got.Slot, want.Slot)) {
				continue
			}
			bad++
			w, g := want, got
			w.Slot, g.Slot, w.Len, g.Len = nil, nil, 0, 0
			c := fmt.Sprintf("%d-bit %s: kernel %s, kboost %s", bits, opKey(buf), w, g)
			switch {
			case !sameVerdict(want, got):
			case want.Len != got.Len:
				c = fmt.Sprintf("%d-bit %s: kernel len %d, kboost len %d", bits, opKey(buf), want.Len, got.Len)
			default:
				c = fmt.Sprintf("%d-bit %s: slot images differ", bits, opKey(buf))
			}
			classes[c]++
			if len(examples) < 40 {
				examples = append(examples, fmt.Sprintf("%d-bit % x\n\tkernel: %s\n\tkboost: %s %v", bits, buf, want, got, d.ReasonIDs()))
			}
		}
	}
	t.Logf("%d inputs, %d disagreements", n, bad)
	if bad > 0 {
		keys := make([]string, 0, len(classes))
		for k := range classes {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return classes[keys[i]] > classes[keys[j]] })
		var top []string
		for _, k := range keys[:min(40, len(keys))] {
			top = append(top, fmt.Sprintf("%6d  %s", classes[k], k))
		}
		t.Errorf("%s disagrees with the kernel's code on %d of %d inputs (%d classes); largest:\n%s\nexamples:\n%s",
			name, bad, n, len(classes), strings.Join(top, "\n"), strings.Join(examples, "\n"))
	}
}

// The x86 uprobes policies against each version's arch_uprobe_analyze_insn
// (the tables are generated from the kernel source like linux-6.1.golden):
// verdict, errno, decoder length, emulated or not, and can_optimize().
func TestGoldenUprobes(t *testing.T) { goldenUprobes(t, "uprobes-x86", "testdata/uprobes-x86.golden") }

func TestGoldenUprobes612(t *testing.T) {
	goldenUprobes(t, "uprobes-6.12", "testdata/uprobes-6.12.golden")
}

func TestGoldenUprobes72(t *testing.T) {
	goldenUprobes(t, "uprobes-7.2", "testdata/uprobes-7.2.golden")
}

func goldenUprobes(t *testing.T, name, path string) {
	p, err := boost.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	tab := readGolden(t, path)
	var bad int
	var report strings.Builder
	for i := range tab.Rows {
		r := &tab.Rows[i]
		win := append(append([]byte{}, r.Insn...), r.Rest...)
		for len(win) < 16 {
			win = append(win, 0xCC)
		}
		d := p.ClassifyBytesEnv(win, goldenMode(r), 0x401000, p.DefaultEnv())
		got := gotWant(d)
		why := ""
		switch {
		case !sameVerdict(r.Want, got):
			why = fmt.Sprintf("kboost: %s", got)
		case r.Want.Len > 0 && d.Len != r.Want.Len:
			why = fmt.Sprintf("kboost length %d", d.Len)
		case r.Want.Verdict != "reject" && d.Emulated != (r.Want.Emulate == "branch" || r.Want.Emulate == "push"):
			why = fmt.Sprintf("kboost emulated %v", d.Emulated)
		case d.Optimizable != r.Want.Opt:
			why = fmt.Sprintf("kboost optimizable %v", d.Optimizable)
		}
		if why != "" {
			bad++
			fmt.Fprintf(&report, "line %d: %s\n\tkernel: %s\n\t%s (reasons %v)\n", r.Line, r, r.Want, why, d.ReasonIDs())
		}
	}
	t.Logf("%d rows, %d disagreements", len(tab.Rows), bad)
	if bad > 0 {
		t.Errorf("%s disagrees with the kernel on %d rows:\n%s", name, bad, report.String())
	}
}

// uprobes-x86 (a model of 6.1) against the live kernel of the machine that made
// uprobes-x86-host.golden, on the rows where the 6.1 source and that kernel
// agree; rows where the kernel changed since 6.1 (its decoder map grew) are
// counted and logged, not held against the 6.1 model.
func TestGoldenUprobesHost(t *testing.T) {
	p, err := boost.Lookup("uprobes-x86")
	if err != nil {
		t.Fatal(err)
	}
	host := readGolden(t, "testdata/uprobes-x86-host.golden")
	src := readGolden(t, "testdata/uprobes-x86.golden")
	v61 := map[string]string{}
	for _, r := range src.Rows {
		v61[r.Bytes()+"\t"+r.Mode()] = acceptance(r.Want)
	}
	var bad, changed int
	var report strings.Builder
	for i := range host.Rows {
		r := &host.Rows[i]
		want := acceptance(r.Want)
		if old, ok := v61[r.Bytes()+"\t"+r.Mode()]; !ok {
			t.Fatalf("line %d: %s is not in uprobes-x86.golden", r.Line, r)
		} else if old != want {
			changed++
			t.Logf("changed since 6.1: %s (6.1: %s)", r, old)
			continue
		}
		win := append(append([]byte{}, r.Insn...), r.Rest...)
		for len(win) < 16 {
			win = append(win, 0xCC)
		}
		d := p.ClassifyBytesEnv(win, goldenMode(r), 0x401000, p.DefaultEnv())
		if got := acceptance(gotWant(d)); got != want {
			bad++
			fmt.Fprintf(&report, "line %d: %s\n\tkernel %s: %s\n\tkboost: %s (reasons %v)\n",
				r.Line, r, host.Header[0], want, got, d.ReasonIDs())
		}
	}
	t.Logf("%d rows, %d changed since 6.1, %d disagreements", len(host.Rows), changed, bad)
	if bad > 0 {
		t.Errorf("uprobes-x86 disagrees with the live kernel on %d rows:\n%s", bad, report.String())
	}
}

// acceptance reduces a verdict to what a live kernel shows: accept or the errno.
func acceptance(w kernelref.Want) string {
	if w.Verdict == "reject" {
		return "reject " + w.Errno
	}
	return "accept"
}

// uprobes-6.18 against the live 6.18.44 kernel that made
// uprobes-x86-host.golden, on every row: the rows where that kernel differs
// from 6.1 (its decoder) included.
func TestGoldenUprobesHost618(t *testing.T) {
	p, err := boost.Lookup("uprobes-6.18")
	if err != nil {
		t.Fatal(err)
	}
	host := readGolden(t, "testdata/uprobes-x86-host.golden")
	if !strings.Contains(host.Header[0], "release 6.18.") {
		t.Fatalf("uprobes-x86-host.golden was made on another kernel: %s", host.Header[0])
	}
	var bad int
	var report strings.Builder
	for i := range host.Rows {
		r := &host.Rows[i]
		win := append(append([]byte{}, r.Insn...), r.Rest...)
		for len(win) < 16 {
			win = append(win, 0xCC)
		}
		d := p.ClassifyBytesEnv(win, goldenMode(r), 0x401000, p.DefaultEnv())
		if got, want := acceptance(gotWant(d)), acceptance(r.Want); got != want {
			bad++
			fmt.Fprintf(&report, "line %d: %s\n\tkernel: %s\n\tkboost: %s (reasons %v)\n", r.Line, r, want, got, d.ReasonIDs())
		}
	}
	t.Logf("%d rows, %d disagreements", len(host.Rows), bad)
	if bad > 0 {
		t.Errorf("uprobes-6.18 disagrees with the live kernel on %d rows:\n%s", bad, report.String())
	}
}

// can_optimize() of 7.2 at the end of a page, in the kernel's code and in
// uprobes-7.2: the 10-byte NOP is optimizable only when it does not cross
// into the next page (then uprobe_init_insn refuses its CS prefix).
func TestOracleUprobesPageCross72(t *testing.T) {
	o, p := versionOracle(t, "uprobes-7.2", "7.2")
	nop10 := []byte{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc}
	seen := map[bool]int{}
	for addr := uint64(0x400ff0); addr <= 0x401000; addr++ {
		u, err := o.UprobeAt(64, nop10, addr)
		if err != nil {
			t.Fatal(err)
		}
		d := p.ClassifyBytesEnv(nop10, decode.Mode64, addr, p.DefaultEnv())
		want := kernelref.Want{Verdict: u.Verdict(), Errno: u.Errno}
		if got := gotWant(d); !sameVerdict(want, got) || d.Optimizable != u.Optimize {
			t.Errorf("%#x: kernel %s opt=%v, kboost %s opt=%v", addr, want, u.Optimize, got, d.Optimizable)
		}
		seen[u.Optimize]++
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Errorf("the kernel optimized %v: the range should hold both", seen)
	}
	t.Logf("0x400ff0..0x401000: %d addresses optimizable, %d not (crossing), kboost as the kernel", seen[true], seen[false])
}

// The x86 uprobes policies against their kernel's arch_uprobe_analyze_insn,
// run live (KBOOST_ORACLE=1) on the decoder sample (every opcode of every map
// after each prefix, operand forms, random bytes) in 64- and 32-bit
// processes: verdict, errno, emulated or not, can_optimize().
func TestOracleUprobes61Sample(t *testing.T) { oracleUprobeSample(t, "uprobes-x86", "6.1") }

func TestOracleUprobes612Sample(t *testing.T) { oracleUprobeSample(t, "uprobes-6.12", "6.12") }

func TestOracleUprobes72Sample(t *testing.T) { oracleUprobeSample(t, "uprobes-7.2", "7.2") }

func oracleUprobeSample(t *testing.T, name, version string) {
	o, p := versionOracle(t, name, version)
	n, bad := 0, 0
	var examples []string
	for _, bits := range []int{64, 32} {
		mode := decode.Mode64
		if bits == 32 {
			mode = decode.Mode32
		}
		for _, buf := range kernelref.DecoderSample(bits, 2, 20000) {
			win := append([]byte{}, buf...)
			for len(win) < 16 {
				win = append(win, 0xCC)
			}
			u, err := o.Uprobe(bits, win)
			if err != nil {
				t.Fatal(err)
			}
			d := p.ClassifyBytesEnv(win, mode, 0x400000, p.DefaultEnv())
			want := kernelref.Want{Verdict: u.Verdict(), Errno: u.Errno}
			got := gotWant(d)
			n++
			if sameVerdict(want, got) && d.Optimizable == u.Optimize &&
				(want.Verdict == "reject" || d.Emulated == (u.Ops == "branch" || u.Ops == "push")) {
				continue
			}
			bad++
			if len(examples) < 40 {
				examples = append(examples, fmt.Sprintf("%d-bit % x\n\tkernel: %s ops=%s opt=%v\n\tkboost: %s emulated=%v opt=%v %v",
					bits, buf, want, u.Ops, u.Optimize, got, d.Emulated, d.Optimizable, d.ReasonIDs()))
			}
		}
	}
	t.Logf("%d inputs, %d disagreements", n, bad)
	if bad > 0 {
		t.Errorf("%s disagrees with the kernel's code on %d of %d inputs; first:\n%s", name, bad, n, strings.Join(examples, "\n"))
	}
}

// versionOracle opens the kernel-code oracle of Debian's linux-source-V
// (closed at the end of the test) and looks policy name up.
func versionOracle(t *testing.T, name, version string) (*kernelref.Oracle, *boost.Policy) {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 to run the kernel-code oracle")
	}
	o, err := kernelref.Open(kernelref.Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	p, err := boost.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return o, p
}
