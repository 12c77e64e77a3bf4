//go:build linux

package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// TestOracleARM64Kallsyms boots Debian's arm64 kernel once (then uses the cache)
// and checks its kallsyms dump.
func TestOracleARM64Kallsyms(t *testing.T) {
	checkDebianKallsyms(t, "linux-image-arm64", "_stext", "_etext", "vfs_read", "el1h_64_sync")
}

// checkDebianKallsyms boots the Debian kernel package pkg once (then uses
// the cache) and checks its kallsyms dump: well-formed, with the named
// symbols.
func checkDebianKallsyms(t *testing.T, pkg string, want ...string) {
	t.Helper()
	oracleGate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p, err := DebianKallsyms(ctx, pkg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckKallsyms(b); err != nil {
		t.Fatal(err)
	}
	syms, _ := parseKallsyms(t, b)
	for _, n := range want {
		if _, ok := syms[n]; !ok {
			t.Errorf("kallsyms has no %s", n)
		}
	}
	t.Logf("%s: %d bytes", p, len(b))
}

// objdumpA64 disassembles words with aarch64-linux-gnu-objdump: one
// "mnemonic operands" string per word.
func objdumpA64(t *testing.T, words []uint32) []string {
	t.Helper()
	tool, err := exec.LookPath("aarch64-linux-gnu-objdump")
	if err != nil {
		t.Fatalf("aarch64-linux-gnu-objdump not found (apt-get install binutils-aarch64-linux-gnu): %v", err)
	}
	raw := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(raw[4*i:], w)
	}
	bin := filepath.Join(t.TempDir(), "words.bin")
	if err := os.WriteFile(bin, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "-D", "-b", "binary", "-m", "aarch64", bin).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	res := make([]string, len(words))
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "      1c:	d65f03c0 	ret"
		addr, rest, ok := strings.Cut(sc.Text(), ":\t")
		if !ok {
			continue
		}
		off, err := strconv.ParseUint(strings.TrimSpace(addr), 16, 64)
		if err != nil || off%4 != 0 || off/4 >= uint64(len(words)) {
			continue
		}
		f := strings.SplitN(rest, "\t", 3)
		if len(f) == 3 {
			res[off/4] = strings.TrimSpace(f[1] + " " + f[2])
		} else if len(f) == 2 {
			res[off/4] = strings.TrimSpace(f[1])
		}
	}
	return res
}

// simulatedByObjdump says whether objdump's text names an instruction that
// arm64 kprobes simulate instead of copying it to a slot (kprobes-arm.md:
// branches, ADR/ADRP, LDR/LDRSW literal).
func simulatedByObjdump(text string) bool {
	mn, ops, _ := strings.Cut(text, " ")
	switch {
	case mn == "b" || mn == "bl" || strings.HasPrefix(mn, "b.") || mn == "cbz" || mn == "cbnz" ||
		mn == "tbz" || mn == "tbnz" || mn == "ret" || mn == "br" || mn == "blr" || mn == "adr" || mn == "adrp":
		return true
	case (mn == "ldr" || mn == "ldrsw") && !strings.Contains(ops, "["):
		return true // the literal form: objdump shows the target address, no brackets
	}
	return false
}

// TestOracleVerifyARM64 boots Debian's arm64 kernel and records what its
// kprobes do at every instruction boundary (and two misaligned offsets) of a
// sample of functions (KBOOST_VERIFY_SAMPLE, default 300). It prints the
// outcome table per mnemonic and, when kboost has the linux-6.1-arm64
// policy, the agreement table. The kernel's answers are checked against the
// rules the kernel documents and against objdump: misaligned offsets and
// notrace functions refused with EINVAL; every slot holds the instruction then
// BRK #6; an accepted probe has a slot exactly when objdump names an
// instruction kprobes does not simulate (it simulates branches, ADR/ADRP and
// literal loads). With the policy, every disagreement fails the test
// (KBOOST_ARM64_STRICT=0: only printed). KBOOST_ARM64_CPU picks another QEMU
// CPU model (e.g. max,pauth-impdef=on); KBOOST_NOCACHE=1 boots even when the
// kernel's record is cached.
func TestOracleVerifyARM64(t *testing.T) {
	oracleGate(t)
	n := verifySample()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	deb, err := kimage.FetchDebianKernel(ctx, "linux-image-arm64")
	if err != nil {
		t.Fatal(err)
	}
	vc := ARM64VerifyConfig{Deb: deb, Args: guest.ARM64VerifyArgs{Sample: n, Seed: 1}, NoCache: os.Getenv("KBOOST_NOCACHE") == "1"}
	if cpu := os.Getenv("KBOOST_ARM64_CPU"); cpu != "" {
		vc.VM.QEMUArgs = []string{"-cpu", cpu} // the last -cpu wins
	}
	v, err := VerifyARM64(ctx, vc)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := v.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", buf.String())
	rep := &v.Report
	s := v.Summarize()
	if s.Functions < n {
		t.Errorf("%d functions recorded, want %d", s.Functions, n)
	}
	if s.NotRun > 0 {
		t.Errorf("%d probes not run", s.NotRun)
	}
	if rep.Leftover != "" {
		t.Errorf("kprobes left behind:\n%s", rep.Leftover)
	}
	traced := map[string]bool{}
	for _, f := range rep.Funcs {
		traced[f.Name] = f.Traced
	}
	const brk6 = "c00020d4" // BRK #6 (0xD42000C0), little-endian
	var words []uint32
	var idx []int
	for i := range rep.Records {
		r := &rep.Records[i]
		switch {
		case !r.Boundary && r.Kernel.Errno != "EINVAL":
			t.Errorf("%s+%#x (misaligned): kernel %+v, want EINVAL", r.Func, r.Off, r.Kernel)
		case !traced[r.Func] && r.Kernel.Errno != "EINVAL":
			t.Errorf("%s+%#x (notrace function): kernel %+v, want EINVAL", r.Func, r.Off, r.Kernel)
		}
		if r.Kernel.Slot != "" && r.Kernel.Slot != r.Bytes+brk6 {
			t.Errorf("%s+%#x: slot %s, want the instruction %s then BRK #6", r.Func, r.Off, r.Kernel.Slot, r.Bytes)
		}
		if r.Boundary && r.Kernel.Errno == "" && r.Kernel.Addr != 0 {
			w, ok := guest.A64Word(r.Bytes)
			if !ok {
				t.Fatalf("%s+%#x: bytes %q", r.Func, r.Off, r.Bytes)
			}
			words = append(words, w)
			idx = append(idx, i)
		}
	}
	if len(words) == 0 {
		t.Fatal("the kernel accepted no probe")
	}
	texts := objdumpA64(t, words)
	bad := 0
	for k, i := range idx {
		r := &rep.Records[i]
		if sim := simulatedByObjdump(texts[k]); sim == (r.Kernel.Slot != "") {
			if bad++; bad <= 20 {
				t.Errorf("%s+%#x %s (%s): slot %q, but objdump's class says simulated=%v", r.Func, r.Off, r.Bytes, texts[k], r.Kernel.Slot, sim)
			}
		}
	}
	t.Logf("objdump cross-check: %d accepted probes, %d inconsistent", len(words), bad)
	if rep.Predicted && os.Getenv("KBOOST_ARM64_STRICT") != "0" {
		for _, f := range guest.ARM64Fields {
			if s.Disagree[f] > 0 {
				t.Errorf("%s: %d disagreements with %s", f, s.Disagree[f], rep.Policy)
			}
		}
	}
}
