package boost

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/kernelref"
)

// The arm64 policies against the kernel's own code: boost/testdata/
// linux-6.1-arm64.golden is produced by Linux 6.1's arm64 probe code compiled
// for the host (internal/kernelref, TestOracleA64Golden regenerates and checks
// it); TestOracleA64Bulk runs that code live on over a million words.

const (
	a64TestAddr = 0xffff800008010000 // kernel text
	a64TestSlot = 0xffff800008000000 // a slot within B range
	a64UserAddr = 0x400000
)

func a64Bytes(ws ...uint32) []byte {
	b := make([]byte, 4*len(ws))
	for i, w := range ws {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

const a64Golden61 = "testdata/linux-6.1-arm64.golden"

func readA64Golden(t *testing.T, path string) []kernelref.A64Row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := kernelref.ReadA64Table(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 1000 {
		t.Fatalf("only %d rows", len(rows))
	}
	return rows
}

// a64KprobeRow decides the row's kprobe under p: rows with PRE words are
// audited as a function and decided at the probe's offset.
func a64KprobeRow(t testing.TB, p *Policy, r *kernelref.A64Row) Decision {
	env := p.DefaultEnv()
	env.SlotAddr = a64TestSlot
	addr := uint64(a64TestAddr)
	if r.ExTable {
		env.Sites = &StaticSites{ExTableAddrs: NewAddrTable([]uint64{addr + uint64(r.Mis)})}
	}
	if len(r.Pre) == 0 || r.NoSym {
		return p.ClassifyBytesEnv(a64Bytes(r.Word), decode.ModeA64, addr+uint64(r.Mis), env)
	}
	text := a64Bytes(append(append([]uint32{}, r.Pre...), r.Word)...)
	start := addr - uint64(4*len(r.Pre))
	a, err := auditA64Test(p, env, Func{Name: "golden", Addr: start, Bytes: text})
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.At(uint64(4*len(r.Pre)) + uint64(r.Mis))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// auditA64Test audits fn through the policy's audit hook (what Auditor.Audit
// dispatches to).
func auditA64Test(p *Policy, env *Env, fn Func) (*FuncAudit, error) {
	return p.audit(p.NewAuditor(env), fn)
}

// a64Render puts a decision in the golden table's words.
func a64Render(d *Decision, uprobe bool) string {
	switch d.Verdict {
	case Reject:
		return "reject " + d.Errno.String()
	case Emulate:
		for _, r := range d.Reasons {
			if h, ok := strings.CutPrefix(r.Rule, "arm64.simulate."); ok {
				return "simulate simulate_" + h
			}
		}
		return "simulate ?"
	case SingleStep:
		if uprobe {
			if d.SlotLen != 4 {
				return fmt.Sprintf("xol with a %d-byte slot", d.SlotLen)
			}
			return "xol"
		}
		b := d.SlotBytes()
		if len(b) != 8 {
			return fmt.Sprintf("slot of %d bytes", len(b))
		}
		return fmt.Sprintf("slot %08x,%08x", binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]))
	}
	return d.Verdict.String()
}

func TestGoldenLinux61ARM64(t *testing.T) { a64GoldenKprobes(t, linux61ARM64, a64Golden61) }

// linux-6.12-arm64 against Debian's 6.12.117 arm64 probe code.
func TestGoldenLinux612ARM64(t *testing.T) {
	a64GoldenKprobes(t, linux612ARM64, "testdata/linux-6.12-arm64.golden")
}

func a64GoldenKprobes(t *testing.T, p *Policy, path string) {
	rows := readA64Golden(t, path)
	var bad int
	var report strings.Builder
	for i := range rows {
		r := &rows[i]
		d := a64KprobeRow(t, p, r)
		if got := a64Render(&d, false); got != r.Kprobe {
			bad++
			if bad < 40 {
				fmt.Fprintf(&report, "line %d: %s\n\tkernel: %s\n\tkboost: %s %v\n", r.Line, r, r.Kprobe, got, d.ReasonIDs())
			}
		}
	}
	t.Logf("%d rows, %d disagreements", len(rows), bad)
	if bad > 0 {
		t.Errorf("%s disagrees with the kernel on %d rows:\n%s", p.Name, bad, report.String())
	}
}

// linux-7.2-arm64 against Debian's 7.2.13 arm64 probe code.
func TestGoldenLinux72ARM64(t *testing.T) {
	a64GoldenKprobes(t, linux72ARM64, "testdata/linux-7.2-arm64.golden")
}

func TestGoldenUprobes72ARM64(t *testing.T) {
	a64GoldenUprobes(t, uprobes72ARM64, "testdata/linux-7.2-arm64.golden")
}

// uprobes-6.18-arm64 against Linux 6.18.0's arm64 probe code, compiled from
// files fetched by hand (no Debian suite carries linux-source-6.18; the
// table's header names the repository, commit and sha256 of every input).
func TestGoldenUprobes618ARM64(t *testing.T) {
	a64GoldenUprobes(t, uprobes618ARM64, "testdata/linux-6.18-arm64.golden")
}

func TestGoldenUprobesARM64(t *testing.T) { a64GoldenUprobes(t, uprobesARM64, a64Golden61) }

func TestGoldenUprobes612ARM64(t *testing.T) {
	a64GoldenUprobes(t, uprobes612ARM64, "testdata/linux-6.12-arm64.golden")
}

func a64GoldenUprobes(t *testing.T, p *Policy, path string) {
	rows := readA64Golden(t, path)
	var bad int
	var report strings.Builder
	for i := range rows {
		r := &rows[i]
		d := p.ClassifyBytesEnv(a64Bytes(r.Word), decode.ModeA64, a64UserAddr+uint64(r.Mis), nil)
		if got := a64Render(&d, true); got != r.Uprobe {
			bad++
			if bad < 40 {
				fmt.Fprintf(&report, "line %d: %s\n\tkernel: %s\n\tkboost: %s %v\n", r.Line, r, r.Uprobe, got, d.ReasonIDs())
			}
		}
	}
	t.Logf("%d rows, %d disagreements", len(rows), bad)
	if bad > 0 {
		t.Errorf("%s disagrees with the kernel on %d rows:\n%s", p.Name, bad, report.String())
	}
}

// boost-arm64 departs from the kernel only where it boosts a word the kernel
// steps, or closes a gap; elsewhere it is the kernel.
func TestGoldenBoostARM64(t *testing.T) {
	rows := readA64Golden(t, a64Golden61)
	counts := map[string]int{}
	for i := range rows {
		r := &rows[i]
		kd := a64KprobeRow(t, linux61ARM64, r)
		bd := a64KprobeRow(t, boostARM64, r)
		k, b := a64Render(&kd, false), a64Render(&bd, false)
		switch {
		case k == b && bd.Verdict != Boost:
			counts["same"]++
		case bd.Verdict == Boost && strings.HasPrefix(r.Kprobe, "slot "):
			counts["boost"]++
			checkA64Boosted(t, r.Word, &bd)
		case strings.HasPrefix(r.Kprobe, "slot ") && strings.HasPrefix(bd.Reasons[len(bd.Reasons)-1].Rule, "boost_arm64.gap."):
			counts[bd.Reasons[len(bd.Reasons)-1].Rule]++
		default:
			t.Errorf("line %d: %s: kernel %s, boost-arm64 %s %v", r.Line, r, r.Kprobe, b, bd.ReasonIDs())
		}
	}
	t.Logf("%v", counts)
	for _, g := range []string{"boost_arm64.gap.bc_cond", "boost_arm64.gap.fp_ldr_literal", "boost_arm64.gap.unallocated", "boost_arm64.gap.branch_space", "boost_arm64.gap.mops", "boost_arm64.gap.exception_state"} {
		if counts[g] == 0 {
			t.Errorf("no golden row exercises %s", g)
		}
	}
}

// checkA64Boosted holds a boosted word to an independent decoder
// (golang.org/x/arch's arm64asm): it must not be a branch, exception or
// PC-relative instruction, and the slot must end in B addr+4.
func checkA64Boosted(t testing.TB, w uint32, d *Decision) {
	t.Helper()
	if why := a64ReadsPC(w); why != "" {
		t.Errorf("boost-arm64 boosts %08x: %s", w, why)
	}
	b := d.SlotBytes()
	if len(b) != 8 || binary.LittleEndian.Uint32(b) != w {
		t.Fatalf("%08x: slot % x", w, b)
	}
	br := binary.LittleEndian.Uint32(b[4:])
	off := int64(int32(br<<6)>>6) * 4
	if br&0xFC000000 != 0x14000000 || uint64(a64TestSlot)+4+uint64(off) != d.Addr+4 {
		t.Fatalf("%08x: slot branch %08x does not reach %#x", w, br, d.Addr+4)
	}
}

// a64ReadsPC says why arm64asm thinks w reads or writes the PC ("" if it does
// not, or cannot decode w).
func a64ReadsPC(w uint32) string {
	in, err := arm64asm.Decode(a64Bytes(w))
	if err != nil {
		return ""
	}
	switch in.Op {
	case arm64asm.B, arm64asm.BL, arm64asm.BR, arm64asm.BLR, arm64asm.RET, arm64asm.CBZ, arm64asm.CBNZ,
		arm64asm.TBZ, arm64asm.TBNZ, arm64asm.ERET, arm64asm.DRPS, arm64asm.SVC, arm64asm.HVC, arm64asm.SMC,
		arm64asm.BRK, arm64asm.HLT, arm64asm.DCPS1, arm64asm.DCPS2, arm64asm.DCPS3, arm64asm.ADR, arm64asm.ADRP:
		return "arm64asm decodes " + in.String()
	}
	for _, a := range in.Args {
		if _, ok := a.(arm64asm.PCRel); ok {
			return "PC-relative operand in " + in.String()
		}
	}
	return ""
}

// TestOracleA64Bulk runs the kernel's own arm64 decision code (compiled from
// linux-source-6.1) on 1.2M words (every golden word, then structured random
// ones) and compares linux-6.1-arm64 and uprobes-arm64 with it word by word;
// every word boost-arm64 boosts is checked against arm64asm.
func TestOracleA64Bulk(t *testing.T) {
	a64Bulk(t, a64Debian("6.1"), linux61ARM64, uprobesARM64, true)
}

// The same for linux-6.12-arm64 and uprobes-6.12-arm64 against 6.12's code.
func TestOracleA64Bulk612(t *testing.T) {
	a64Bulk(t, a64Debian("6.12"), linux612ARM64, uprobes612ARM64, false)
}

func TestOracleA64Bulk72(t *testing.T) {
	a64Bulk(t, a64Debian("7.2"), linux72ARM64, uprobes72ARM64, false)
}

// uprobes-6.18-arm64 against 6.18.0's code, where the hand-fetched files are
// in place (kernelref.HandTree); there is no kprobes policy of 6.18.
func TestOracleA64Bulk618(t *testing.T) { a64Bulk(t, a64Hand("6.18"), nil, uprobes618ARM64, false) }

// a64Debian and a64Hand say where an oracle's kernel code comes from: Debian's
// linux-source-V, or the files of V fetched by hand (the test skips, saying
// so, when they are not on this machine).
func a64Debian(v string) func(testing.TB) kernelref.Options {
	return func(testing.TB) kernelref.Options { return kernelref.Options{Version: v} }
}

func a64Hand(v string) func(testing.TB) kernelref.Options {
	return func(t testing.TB) kernelref.Options {
		tree, _, err := kernelref.HandTree(kernelref.Options{}, v)
		if err != nil {
			t.Skipf("Linux %s's arm64 probe code is compiled from files fetched by hand, not on this machine (%v); "+
				"testdata/linux-%s-arm64.golden, made from them, is checked in CI instead", v, err, v)
		}
		return kernelref.Options{Tree: tree}
	}
}

func a64Bulk(t *testing.T, src func(testing.TB) kernelref.Options, kpol, upol *Policy, withBoost bool) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 to run the arm64 kernel-code oracle")
	}
	o, err := kernelref.OpenA64(src(t))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	words := kernelref.A64Sample(1_200_000, 1)
	kps, ups, err := o.Bulk(words)
	if err != nil {
		t.Fatal(err)
	}
	var badK, badU, boosted, pcFree, unknownAsm int
	var examples []string
	var d Decision
	env := boostARM64.DefaultEnv()
	env.SlotAddr = a64TestSlot
	var kenv *Env
	kname := "no kprobes policy:"
	if kpol != nil {
		kenv, kname = kpol.DefaultEnv(), kpol.Name
	}
	uenv := upol.DefaultEnv()
	for i, w := range words {
		b := a64Bytes(w)
		if kpol != nil {
			kpol.runBytes(new(scratch), &d, b, decode.ModeA64, a64TestAddr, kenv, false)
			if got := a64Code(&d); got != kps[i] {
				badK++
				if len(examples) < 20 {
					examples = append(examples, fmt.Sprintf("kprobe %08x: kernel %#02x, kboost %#02x %v", w, kps[i], got, d.ReasonIDs()))
				}
			}
		}
		upol.runBytes(new(scratch), &d, b, decode.ModeA64, a64UserAddr, uenv, false)
		if got := a64Code(&d); got != ups[i] {
			badU++
			if len(examples) < 20 {
				examples = append(examples, fmt.Sprintf("uprobe %08x: kernel %#02x, kboost %#02x %v", w, ups[i], got, d.ReasonIDs()))
			}
		}
		if !withBoost {
			continue
		}
		boostARM64.runBytes(new(scratch), &d, b, decode.ModeA64, a64TestAddr, env, false)
		if d.Verdict == Boost {
			boosted++
			if !kps[i].Accepted() || kps[i].Decode() != 2 {
				t.Errorf("boost-arm64 boosts %08x, which the kernel does not step (%#02x)", w, kps[i])
			}
			if _, err := arm64asm.Decode(b); err != nil {
				unknownAsm++
			} else {
				pcFree++
			}
			checkA64Boosted(t, w, &d)
		}
	}
	t.Logf("%d words: %s %d disagreements, %s %d; boost-arm64 boosts %d (%d checked PC-free by arm64asm, %d unknown to it)",
		len(words), kname, badK, upol.Name, badU, boosted, pcFree, unknownAsm)
	if badK+badU > 0 {
		t.Errorf("disagreements with the kernel's code:\n%s", strings.Join(examples, "\n"))
	}
}

// a64Code renders a decision as the oracle's bulk code.
func a64Code(d *Decision) kernelref.A64Code {
	var c kernelref.A64Code
	switch d.Verdict {
	case Reject:
		if d.Errno == ENOTSUPP {
			c |= 0x40
		}
		return c
	case Emulate:
		c = 0x80 | 1<<4
		for _, r := range d.Reasons {
			if h, ok := strings.CutPrefix(r.Rule, "arm64.simulate."); ok {
				for j, n := range kernelref.A64Handlers {
					if n == "simulate_"+h {
						c |= kernelref.A64Code(j)
					}
				}
			}
		}
		return c
	}
	return 0x80 | 2<<4
}

// a64PureCodes is what the policies' mask model (a64KprobeDecode,
// a64ProbeDecode, the uprobe trap test) says for w, in the oracle's bulk codes:
// the rules below the site checks, which are the same for every aligned probe.
func a64PureCodes(k *a64Kernel, w uint32) (kp, up kernelref.A64Code) {
	code := func(d a64Decode, s a64Sim) kernelref.A64Code {
		switch d {
		case a64GoodNoSlt:
			return 0x80 | 1<<4 | kernelref.A64Code(s)
		case a64Good:
			return 0x80 | 2<<4
		}
		return 0
	}
	d, s, _ := k.a64KprobeDecode(w)
	kp = code(d, s)
	if w == a64BrkUprobe {
		return kp, 0x40
	}
	d, s, _ = k.a64ProbeDecode(w)
	return kp, code(d, s)
}

// TestOracleA64Sweep compares the mask model with the kernel's compiled code
// over the whole A64 space: every 15th word (286M words) with KBOOST_ORACLE=1,
// every word (2^32) with KBOOST_A64_EXHAUSTIVE=1 as well.
func TestOracleA64Sweep(t *testing.T) { a64Sweep(t, a64Debian("6.1"), a64K61, 15) }

// 6.12's, 6.18's and 7.2's mask models over every 151st word (28M words).
func TestOracleA64Sweep612(t *testing.T) { a64Sweep(t, a64Debian("6.12"), a64K612, 151) }

func TestOracleA64Sweep618(t *testing.T) { a64Sweep(t, a64Hand("6.18"), a64K618, 151) }

func TestOracleA64Sweep72(t *testing.T) { a64Sweep(t, a64Debian("7.2"), a64K72, 151) }

func a64Sweep(t *testing.T, src func(testing.TB) kernelref.Options, k *a64Kernel, step uint32) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 to run the arm64 kernel-code oracle")
	}
	o, err := kernelref.OpenA64(src(t))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	count := uint64(1<<32) / uint64(step)
	if os.Getenv("KBOOST_A64_EXHAUSTIVE") != "" {
		step, count = 1, 1<<32
	}
	var n, bad uint64
	var examples []string
	err = o.Sweep(0x9E3779B9, count, step, func(w uint32, kp, up kernelref.A64Code) error {
		n++
		if kc, u := a64PureCodes(k, w); kc != kp || u != up {
			bad++
			if len(examples) < 20 {
				examples = append(examples, fmt.Sprintf("%08x: kernel kprobe %#02x uprobe %#02x, kboost %#02x %#02x", w, kp, up, kc, u))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d words (step %d): %d disagreements", n, step, bad)
	if bad > 0 {
		t.Errorf("the mask model disagrees with the kernel's code on %d words:\n%s", bad, strings.Join(examples, "\n"))
	}
}
