package kernelref

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kimage"
)

// Tests that run the kernel's code need the kernel source, tar, xz, awk and gcc:
// they are gated by KBOOST_ORACLE=1.
func openOracle(t *testing.T) *Oracle { t.Helper(); return openOracleFor(t, "") }

func openOracleFor(t *testing.T, tarball string) *Oracle {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 to build and run the kernel-code oracle")
	}
	o, err := Open(Options{Tarball: tarball})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// The checked-in golden tables are what the kernel sources say today.
func TestOracleTableUpToDate(t *testing.T) {
	for _, tc := range []struct{ golden, version string }{
		{goldenPath, "6.1"},
		{"../../boost/testdata/linux-6.12.golden", "6.12"},
		{"../../boost/testdata/linux-7.2.golden", "7.2"},
	} {
		t.Run(filepath.Base(tc.golden), func(t *testing.T) {
			tarball := sourceFor(t, tc.version)
			o := openOracleFor(t, tarball)
			var buf bytes.Buffer
			if err := o.WriteTable(&buf); err != nil {
				t.Fatal(err)
			}
			tableUpToDate(t, tc.golden, buf.Bytes(), "go run ./scripts/kernelref -source "+tarball+" -o "+strings.TrimPrefix(tc.golden, "../../"))
		})
	}
	for _, tc := range []struct{ golden, version string }{
		{"../../boost/testdata/uprobes-x86.golden", "6.1"},
		{"../../boost/testdata/uprobes-6.12.golden", "6.12"},
		{"../../boost/testdata/uprobes-7.2.golden", "7.2"},
	} {
		t.Run(filepath.Base(tc.golden), func(t *testing.T) {
			tarball := sourceFor(t, tc.version)
			o := openOracleFor(t, tarball)
			var buf bytes.Buffer
			if err := o.WriteUprobeTable(&buf); err != nil {
				t.Fatal(err)
			}
			tableUpToDate(t, tc.golden, buf.Bytes(), "go run ./scripts/kernelref -uprobes -source "+tarball+" -o "+strings.TrimPrefix(tc.golden, "../../"))
		})
	}
}

func tableUpToDate(t *testing.T, path string, fresh []byte, regen string) {
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(fresh, want) {
		return
	}
	got := strings.Split(string(fresh), "\n")
	old := strings.Split(string(want), "\n")
	var diffs []string
	for i := 0; i < max(len(got), len(old)) && len(diffs) < 20; i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(old) {
			w = old[i]
		}
		if g != w {
			diffs = append(diffs, fmt.Sprintf("line %d:\n  file:   %s\n  kernel: %s", i+1, w, g))
		}
	}
	t.Errorf("%s is stale (regenerate: %s):\n%s", path, regen, strings.Join(diffs, "\n"))
}

// Known answers, each checked by reading the cited kernel line (6.1.192).
func TestOracleSpotChecks(t *testing.T) {
	o := openOracle(t)
	if !strings.HasPrefix(o.Build.Version, "6.1.") {
		t.Fatalf("kernel %s: the spot checks are for 6.1", o.Build.Version)
	}
	for _, tc := range []struct {
		text []byte
		q    Kprobe
		want string
	}{
		{b(0x48, 0x89, 0xE5), Kprobe{}, "boost"},                              // core.c can_boost default: return 1
		{b(0x48, 0x89, 0xE5), Kprobe{Preemption: true}, "singlestep"},         // prepare_singlestep: !IS_ENABLED(CONFIG_PREEMPTION)
		{b(0x48, 0x89, 0xE5), Kprobe{Post: true}, "singlestep"},               // prepare_singlestep: !p->post_handler
		{b(0x74, 0x00), Kprobe{}, "emulate"},                                  // prepare_emulation: case 0x70 ... 0x7f
		{b(0xCC), Kprobe{}, "reject EINVAL"},                                  // __copy_instruction: INT3_INSN_OPCODE
		{b(0x8E, 0xD0), Kprobe{}, "reject EINVAL"},                            // insn_masking_exception: MOV_SREG_OPCODE /2
		{b(0x0F, 0x01, 0xC1), Kprobe{}, "reject EOPNOTSUPP"},                  // prepare_emulation: 0f 01 reg 0 mod 3
		{b(0xFF, 0x15, 0, 0, 0, 0), Kprobe{}, "reject EOPNOTSUPP"},            // prepare_emulation: MOD != 3, "TODO"
		{b(0x3E, 0x48, 0xB8, 1, 2, 3, 4, 5, 6, 7, 8), Kprobe{}, "singlestep"}, // MAX_INSN_SIZE - len >= JMP32_INSN_SIZE
	} {
		q := tc.q
		q.Bits, q.Text, q.Func, q.Slot = 64, tc.text, DefaultAddr64, DefaultSlot64
		r, err := o.Kprobe(q)
		if err != nil {
			t.Fatal(err)
		}
		got := r.Verdict()
		if r.Errno != "" {
			got += " " + r.Errno
		}
		if got != tc.want {
			t.Errorf("% x %+v: kernel says %s, the source reads %s", tc.text, tc.q, got, tc.want)
		}
	}
}

// lengthMismatch describes how kboost's decoder and the kernel's differ on buf.
func lengthMismatch(o *Oracle, buf []byte, bits int) (string, error) {
	mode := decode.Mode64
	if bits == 32 {
		mode = decode.Mode32
	}
	k, err := o.Decode(bits, buf)
	if err != nil {
		return "", err
	}
	inst, derr := decode.Decode(buf, mode, 0)
	switch {
	case k.OK && derr == nil && k.Len == inst.Len:
		return "", nil
	case k.OK && derr == nil:
		return fmt.Sprintf("kernel %d, kboost %d", k.Len, inst.Len), nil
	case k.OK:
		return fmt.Sprintf("kernel %d, kboost error (%v)", k.Len, derr), nil
	case derr == nil:
		return fmt.Sprintf("kernel error, kboost %d", inst.Len), nil
	}
	return "", nil
}

// kboost's decoder against the kernel's (what can_probe walks with) on
// DecoderSample. They differ where the kernel's opcode map is lax or incomplete
// (undefined encodings); this is a report of those classes, in the test log
// and, with KBOOST_DECODER_REPORT=FILE, in FILE with examples. On real code
// they agree: TestOracleVmlinuxLengths.
func TestOracleDecoderLengths(t *testing.T) {
	o := openOracle(t)
	type hit struct {
		bits int
		buf  []byte
		what string
	}
	classes := map[string][]hit{}
	total := 0
	for _, bits := range []int{64, 32} {
		for _, buf := range DecoderSample(bits, 1, 20000) {
			total++
			what, err := lengthMismatch(o, buf, bits)
			if err != nil {
				t.Fatal(err)
			}
			if what == "" {
				continue
			}
			cls := fmt.Sprintf("%d-bit %s", bits, mismatchClass(buf, bits, what))
			classes[cls] = append(classes[cls], hit{bits, buf, what})
		}
	}
	names := make([]string, 0, len(classes))
	n := 0
	for c, hs := range classes {
		names = append(names, c)
		n += len(hs)
	}
	sort.Strings(names)
	var rep strings.Builder
	fmt.Fprintf(&rep, "kernel insn decoder (Linux %s) vs kboost decode: %d of %d byte strings differ\n", o.Build.Version, n, total)
	for _, c := range names {
		hs := classes[c]
		fmt.Fprintf(&rep, "%s: %d\n", c, len(hs))
		for _, h := range hs[:min(3, len(hs))] {
			fmt.Fprintf(&rep, "\t% x: %s\n", h.buf, h.what)
		}
	}
	t.Logf("kernel insn decoder vs kboost: %d of %d byte strings differ, in %d classes", n, total, len(names))
	for _, c := range names {
		t.Logf("  %-60s %d", c, len(classes[c]))
	}
	if path := os.Getenv("KBOOST_DECODER_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(rep.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// mismatchClass names the first opcode bytes, so that one kernel-map quirk is
// one class.
func mismatchClass(buf []byte, bits int, what string) string {
	i := 0
	for i < len(buf) && isLegacyPrefix(buf[i]) {
		i++
	}
	if bits == 64 && i < len(buf) && buf[i]&0xF0 == 0x40 {
		i++
	}
	end := i + 1
	switch {
	case i < len(buf) && (buf[i] == 0xC4 || buf[i] == 0x62 || buf[i] == 0x8F):
		end = i + 1
	case i+1 < len(buf) && buf[i] == 0x0F && (buf[i+1] == 0x38 || buf[i+1] == 0x3A):
		end = i + 3
	case i < len(buf) && buf[i] == 0x0F:
		end = i + 2
	}
	kind := what
	if j := strings.IndexAny(kind, "0123456789("); j >= 0 && strings.HasPrefix(kind, "kernel ") && kind[7] >= '0' && kind[7] <= '9' {
		kind = "lengths differ"
	}
	if strings.Contains(what, "kboost error") {
		kind = "kboost rejects"
	}
	if strings.HasPrefix(what, "kernel error") {
		kind = "kernel rejects"
	}
	return fmt.Sprintf("opcode % x: %s", buf[i:min(end, len(buf))], kind)
}

func isLegacyPrefix(c byte) bool {
	switch c {
	case 0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3:
		return true
	}
	return false
}

// On the code the kernel is built from, the kernel's decoder (what can_probe
// walks a function with) and kboost's must agree at every instruction: a linear
// sweep of every executable section of Debian's current amd64 and 686 kernels.
func TestOracleVmlinuxLengths(t *testing.T) {
	o := openOracle(t)
	for _, k := range []struct {
		meta string
		bits int
	}{{"linux-image-amd64", 64}, {"linux-image-686", 32}} {
		deb, err := kimage.FetchDebianKernel(context.Background(), k.meta)
		if err != nil {
			t.Fatal(err)
		}
		f, err := kimage.Open(deb)
		if err != nil {
			t.Fatal(err)
		}
		mode := decode.Mode64
		if k.bits == 32 {
			mode = decode.Mode32
		}
		total, bad, folded := 0, 0, 0
		classes := map[string]int{}
		var examples []string
		for _, s := range f.ExecSections() {
			data, err := s.Data()
			if err != nil {
				t.Fatal(err)
			}
			var offs []uint32
			var lens []int
			var inst decode.Inst
			for off := 0; off < len(data); {
				n := 1
				if err := decode.DecodeInto(&inst, data[off:], mode, s.Addr+uint64(off)); err == nil {
					n = inst.Len
					offs = append(offs, uint32(off))
					lens = append(lens, n)
				}
				off += n
			}
			kl, err := o.DecodeAt(k.bits, data, offs)
			if err != nil {
				t.Fatal(err)
			}
			total += len(offs)
			for i, off := range offs {
				if int(kl[i]) == lens[i] {
					continue
				}
				end := min(int(off)+15, len(data))
				if emulatePrefixFold(data[off:end], int(kl[i]), k.bits) {
					folded++
					continue
				}
				bad++
				what := fmt.Sprintf("kernel %d, kboost %d", kl[i], lens[i])
				classes[mismatchClass(data[off:end], k.bits, what)]++
				if len(examples) < 20 {
					examples = append(examples, fmt.Sprintf("%s %#x: % x: %s", s.Name, s.Addr+uint64(off), data[off:end], what))
				}
			}
		}
		f.Close()
		t.Logf("%s (%s): %d instructions, %d Xen/KVM emulate prefixes folded by the kernel decoder, %d other length differences %v",
			k.meta, filepath.Base(deb), total, folded, bad, classes)
		if bad > 0 {
			t.Errorf("%s: kernel decoder and kboost differ on %d instructions:\n%s", k.meta, bad, strings.Join(examples, "\n"))
		}
	}
}

// emulatePrefixFold reports whether b starts with the Xen or KVM emulate prefix
// (ud2 then "xen" or "kvm") and the kernel's length klen covers it and the next
// instruction: the kernel decoder reads the pair as one instruction
// (insn_get_emulate_prefix in arch/x86/lib/insn.c); kboost's decoder, like the
// CPU and objdump, stops after the ud2. kboost's kernel view (package boost)
// models the fold.
func emulatePrefixFold(b []byte, klen, bits int) bool {
	if len(b) < 6 || b[0] != 0x0F || b[1] != 0x0B ||
		!(string(b[2:5]) == "xen" || string(b[2:5]) == "kvm") {
		return false
	}
	mode := decode.Mode64
	if bits == 32 {
		mode = decode.Mode32
	}
	next, err := decode.Decode(b[5:], mode, 0)
	return err == nil && klen == 5+next.Len
}
