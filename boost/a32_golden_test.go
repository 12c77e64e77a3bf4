package boost

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/kernelref"
)

// The 32-bit ARM policies against the kernel's own code: boost/testdata/
// linux-6.1-arm.golden and linux-6.1-arm-thumb.golden are produced by Linux
// 6.1's arch/arm/probes code compiled for the host (internal/kernelref);
// TestOracleA32Golden checks them against that code and regenerates them
// with KBOOST_UPDATE_GOLDEN=1:
//
//	KBOOST_ORACLE=1 KBOOST_UPDATE_GOLDEN=1 go test ./boost -run TestOracleA32Golden
//
// TestOracleA32Bulk runs the code live on over a million values per
// instruction set.

const a32TestAddr = 0xc0100000 // kernel text (ARM: lowmem)

func a32GoldenPath(thumb bool) string {
	if thumb {
		return "testdata/linux-6.1-arm-thumb.golden"
	}
	return "testdata/linux-6.1-arm.golden"
}

// a32Mem is the value in memory order for ClassifyBytes.
func a32Mem(v uint32, thumb bool) []byte {
	switch {
	case !thumb:
		return binary.LittleEndian.AppendUint32(nil, v)
	case a32Thumb32(v):
		b := binary.LittleEndian.AppendUint16(nil, uint16(v>>16))
		return binary.LittleEndian.AppendUint16(b, uint16(v))
	}
	return binary.LittleEndian.AppendUint16(nil, uint16(v))
}

// a32GoRecord is the Go policy's answer in the oracle's terms: verdict, errno
// and slot from the policy's Decision, the rest from the same decode.
func a32GoRecord(v uint32, thumb bool) kernelref.A32Record {
	p, mode := linux61ARM, decode.ModeA32
	if thumb {
		p, mode = linux61Thumb, decode.ModeT32
	}
	d := p.ClassifyBytes(a32Mem(v, thumb), mode, a32TestAddr)
	var rec kernelref.A32Record
	switch d.Verdict {
	case Reject:
		rec.Ret = -int(d.Errno)
		return rec
	case SingleStep:
		rec.Decode = 1
		copy(rec.Slot[:], d.SlotBytes())
	case Emulate:
		rec.Decode = 2
	default:
		rec.Decode = 9
	}
	r := a32Prepare(v, thumb)
	rec.Handler = r.handler
	if rec.Handler == "" {
		rec.Handler = "-"
	}
	rec.Cond, rec.Stack, rec.ITStep = r.cc, r.stack, r.itStep
	rec.Opt = d.Optimizable
	for _, o := range d.OptReasons {
		if o.Rule == rA32OptDirect.ID {
			rec.Direct = true
		}
	}
	return rec
}

func a32Render(r kernelref.A32Record, thumb bool) string {
	s := r.String()
	if r.Ret == 0 && r.Decode == 1 {
		n := 8
		if thumb {
			n = 6
		}
		s += fmt.Sprintf(" % x", r.Slot[:n])
	}
	return s
}

func a32ValueHex(v uint32, thumb bool) string {
	if thumb && !a32Thumb32(v) {
		return fmt.Sprintf("%04x", v)
	}
	return fmt.Sprintf("%08x", v)
}

// a32EdgeValues are the words at the tables' edges: every entry's value, with
// its don't-care bits all set, with each of its masked bits flipped, and with
// each constrained register nibble set to SP and to PC (ARM: also under a
// condition).
func a32EdgeValues(thumb bool) []uint32 {
	set := map[uint32]bool{}
	add := func(v uint32) {
		switch {
		case !thumb:
		case v>>16 == 0:
			if v >= 0xe800 {
				return
			}
		case v>>16 < 0xe800:
			return
		}
		set[v] = true
		if !thumb {
			set[v&0x0fffffff|0x10000000] = true // NE
		}
	}
	seen := map[*a32Table]bool{}
	var visit func(t *a32Table, width uint32)
	visit = func(t *a32Table, width uint32) {
		if seen[t] {
			return
		}
		seen[t] = true
		for i := range t.e {
			e := &t.e[i]
			base := e.value
			if !thumb && e.mask&0xf0000000 == 0 {
				base |= 0xe0000000
			}
			for _, v := range []uint32{base, base | ^e.mask&width} {
				add(v)
				for b := 0; b < 32; b++ {
					if e.mask&(1<<b) != 0 {
						add(v ^ 1<<b)
					}
				}
				for pos := 0; pos < 20; pos += 4 {
					if (e.regs>>pos)&0xf != 0 {
						add(v&^(0xf<<pos) | 0xd<<pos)
						add(v | 0xf<<pos)
						add(v&^(0xf<<pos) | 0xe<<pos)
					}
				}
			}
			if e.kind == dTable {
				visit(e.sub, width)
			}
		}
	}
	if thumb {
		visit(a32TopT32, 0xffffffff)
		visit(a32TopT16, 0xffff)
		for _, t := range []*a32Table{a32StackT32} {
			visit(t, 0xffffffff)
		}
		// The kprobe breakpoints and everyday prologue/epilogue words.
		for _, v := range []uint32{0xde18, 0xf7f0a018, 0xb580, 0xbd80, 0xb510, 0xbd10, 0xe92d4ff0, 0xe8bd8ff0,
			0x4770, 0x46bd, 0xbf00, 0xbf08, 0xb800, 0xb8ff, 0xe9c00100, 0xf84d0d04} {
			add(v)
		}
	} else {
		visit(a32TopARM, 0xffffffff)
		visit(a32StackARM, 0xffffffff)
		for _, v := range []uint32{0x07f001f8, 0xe1a0c00d, 0xe92dd800, 0xe24cb004, 0xe52de004, 0xe12fff1e,
			0xe89da800, 0xe8bd8010, 0xe320f000, 0xe92d4ff0, 0xe50d0044, 0xe78d0001, 0xe16d00fc} {
			add(v)
		}
	}
	out := make([]uint32, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

type a32GoldenRow struct {
	v    uint32
	want string
}

func readA32Golden(t *testing.T, thumb bool) []a32GoldenRow {
	t.Helper()
	f, err := os.Open(a32GoldenPath(thumb))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []a32GoldenRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		h, rest, ok := strings.Cut(l, "\t")
		v, err := strconv.ParseUint(h, 16, 32)
		if !ok || err != nil {
			t.Fatalf("bad golden line %q", l)
		}
		rows = append(rows, a32GoldenRow{uint32(v), rest})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 1000 {
		t.Fatalf("only %d rows", len(rows))
	}
	return rows
}

func testA32Golden(t *testing.T, thumb bool) {
	rows := readA32Golden(t, thumb)
	bad := 0
	for _, r := range rows {
		if got := a32Render(a32GoRecord(r.v, thumb), thumb); got != r.want {
			bad++
			if bad <= 20 {
				t.Errorf("%s: kernel %q, policy %q", a32ValueHex(r.v, thumb), r.want, got)
			}
		}
	}
	t.Logf("%d rows, %d disagreements", len(rows), bad)
}

func TestGoldenLinux61ARM(t *testing.T)   { testA32Golden(t, false) }
func TestGoldenLinux61Thumb(t *testing.T) { testA32Golden(t, true) }

func openA32Oracle(t *testing.T) *kernelref.OracleA32 {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 to build and run Linux 6.1's arch/arm/probes code")
	}
	o, err := kernelref.OpenA32(kernelref.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOracleA32Golden(t *testing.T) {
	o := openA32Oracle(t)
	for _, thumb := range []bool{false, true} {
		vals := a32EdgeValues(thumb)
		recs, err := o.Bulk(vals, thumb)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		isa := "A32 (ARM-mode kernel: decode-arm.c, checkers-arm.c, actions-arm.c, opt-arm.c can_optimize)"
		if thumb {
			isa = "T16/T32 (CONFIG_THUMB2_KERNEL: decode-thumb.c, checkers-thumb.c, actions-thumb.c); 32-bit values show the first halfword first"
		}
		fmt.Fprintf(&b, "# kboost golden table: 32-bit ARM kprobes decisions of Linux %s (Debian linux-source-6.1), %s.\n", o.Build.Version, isa)
		b.WriteString("# Generated by the kernel's own arch/arm/probes code compiled for the host (internal/kernelref);\n")
		b.WriteString("# regenerate: KBOOST_ORACLE=1 KBOOST_UPDATE_GOLDEN=1 go test ./boost -run TestOracleA32Golden\n")
		b.WriteString("# value\tarch_prepare_kprobe: reject ERRNO | slot/simulate HANDLER ccCOND stackN [opt] [direct] [itstep] [slot bytes]\n")
		for i, v := range vals {
			fmt.Fprintf(&b, "%s\t%s\n", a32ValueHex(v, thumb), a32Render(recs[i], thumb))
		}
		path := a32GoldenPath(thumb)
		if os.Getenv("KBOOST_UPDATE_GOLDEN") != "" {
			if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(old) != b.String() {
			t.Errorf("%s differs from the kernel's code: regenerate (see the file header) and review the diff", path)
		}
	}
}

// a32BulkValues: edges, then random values (Thumb: every 16-bit halfword and
// random 32-bit instructions).
func a32BulkValues(thumb bool, n int) []uint32 {
	rng := rand.New(rand.NewSource(61))
	vals := a32EdgeValues(thumb)
	if thumb {
		for h := uint32(0); h < 0xe800; h++ {
			vals = append(vals, h)
		}
		for len(vals) < n {
			v := rng.Uint32()
			if v>>16 < 0xe800 {
				v |= 0xe8000000
			}
			vals = append(vals, v)
		}
		return vals
	}
	for len(vals) < n {
		vals = append(vals, rng.Uint32())
	}
	return vals
}

func TestOracleA32Bulk(t *testing.T) {
	o := openA32Oracle(t)
	n := 1 << 20
	if testing.Short() {
		n = 1 << 16
	}
	for _, thumb := range []bool{false, true} {
		vals := a32BulkValues(thumb, n+n/8)
		recs, err := o.Bulk(vals, thumb)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		counts := map[string]int{}
		for i, v := range vals {
			want := a32Render(recs[i], thumb)
			got := a32Render(a32GoRecord(v, thumb), thumb)
			counts[strings.Fields(want)[0]]++
			if got != want {
				bad++
				if bad <= 20 {
					t.Errorf("%s: kernel %q, policy %q", a32ValueHex(v, thumb), want, got)
				}
			}
		}
		t.Logf("thumb=%v: %d values, %d disagreements; kernel verdicts %v", thumb, len(vals), bad, counts)
	}
}

func FuzzClassifyA32(f *testing.F) {
	f.Add([]byte{0x0d, 0xc0, 0xa0, 0xe1}, uint64(a32TestAddr))
	f.Add([]byte{0x04, 0xe0, 0x2d, 0xe5}, uint64(a32TestAddr+2))
	f.Fuzz(func(t *testing.T, b []byte, addr uint64) {
		for _, env := range []*Env{nil, {SlotAddr: addr ^ 0x1000000, Config: Config{PostHandler: addr&1 != 0}}} {
			d := linux61ARM.ClassifyBytesEnv(b, decode.ModeA32, addr, env)
			if d.Optimizable && d.OptLen != 4 {
				t.Fatalf("% x: optimizable over %d bytes, an A32 optprobe replaces one word", b, d.OptLen)
			}
			wf := d
			wf.Optimizable = false // checkDecision's optprobe lengths are x86's
			checkDecision(t, "linux-6.1-arm", &wf)
			if d.Verdict == SingleStep && d.SlotLen != 8 {
				t.Fatalf("% x: slot of %d bytes", b, d.SlotLen)
			}
			linux61ARM.ExplainBytes(b, decode.ModeA32, addr, env)
		}
	})
}

func FuzzClassifyT32(f *testing.F) {
	f.Add([]byte{0x10, 0xb5}, uint64(a32TestAddr))
	f.Add([]byte{0x2d, 0xe9, 0xf0, 0x4f}, uint64(a32TestAddr+1))
	f.Fuzz(func(t *testing.T, b []byte, addr uint64) {
		d := linux61Thumb.ClassifyBytes(b, decode.ModeT32, addr)
		checkDecision(t, "linux-6.1-thumb", &d)
		if d.Verdict == SingleStep && d.SlotLen != 6 {
			t.Fatalf("% x: slot of %d bytes", b, d.SlotLen)
		}
		if d.Optimizable {
			t.Fatalf("% x: a Thumb-2 kernel has no optprobes", b)
		}
		linux61Thumb.ExplainBytes(b, decode.ModeT32, addr, nil)
	})
}

// The 32-bit ARM probe code did not change after 6.1 (kernel-evolution.md 11:
// arch/arm/probes is identical in 6.12.117; 7.2.13 renames a header and the
// uprobe set_swbp signature): the kernel's own decode tables, checkers and
// arch_prepare_kprobe compiled from Debian's 6.12 and 7.2 sources give the
// same record as 6.1's on every golden value and 2^18 more per ISA, so
// linux-6.1-arm and linux-6.1-thumb are those kernels' policies too.
func TestOracleA32Unchanged(t *testing.T) {
	o61 := openA32Oracle(t)
	for _, v := range []string{"6.12", "7.2"} {
		o, err := kernelref.OpenA32(kernelref.Options{Version: v})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		for _, thumb := range []bool{false, true} {
			vals := a32BulkValues(thumb, 1<<18)
			old, err := o61.Bulk(vals, thumb)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := o.Bulk(vals, thumb)
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i := range vals {
				if a, b := a32Render(old[i], thumb), a32Render(recs[i], thumb); a != b {
					bad++
					if bad <= 10 {
						t.Errorf("%s thumb=%v %s: 6.1 %q, %s %q", v, thumb, a32ValueHex(vals[i], thumb), a, v, b)
					}
				}
			}
			t.Logf("%s (%s) thumb=%v: %d values, %d differ from 6.1", v, o.Build.Version, thumb, len(vals), bad)
		}
	}
}
