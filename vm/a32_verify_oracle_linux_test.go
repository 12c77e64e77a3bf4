//go:build linux

package vm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// TestOracleARMKallsyms boots Debian's armhf (armmp) kernel once (then uses
// the cache) and checks its kallsyms dump.
func TestOracleARMKallsyms(t *testing.T) {
	checkDebianKallsyms(t, "linux-image-armmp", "_stext", "_etext", "vfs_read", "__gnu_mcount_nc")
}

// TestOracleVerifyARM boots Debian's armhf (armmp, ARM-mode) kernel and
// records what its kprobes do at every instruction boundary (and two
// misaligned offsets) of a sample of functions (KBOOST_VERIFY_SAMPLE,
// default 300), enabling each round's probes and waiting for the delayed
// optimizer before reading [OPTIMIZED]; the host reads the kprobe slot
// pages after each round through QEMU (the kernel has no /proc/kcore). It
// prints the outcome table per mnemonic and the agreement table with
// linux-6.1-arm. The kernel's answers
// are checked against the rules the kernel documents: misaligned offsets,
// notrace functions (not in available_filter_functions and no mcount call in
// the Image: an alias such as __se_sys_foo is listed under its other name)
// and the mcount call (no KPROBES_ON_FTRACE on arm) are refused with EINVAL,
// nothing is [FTRACE]. Every disagreement with the policy fails the test
// (KBOOST_ARM_STRICT=0: only printed).
// KBOOST_NOCACHE=1 boots even when the kernel's record is cached.
func TestOracleVerifyARM(t *testing.T) {
	oracleGate(t)
	n := verifySample()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	deb, err := kimage.FetchDebianKernel(ctx, "linux-image-armmp")
	if err != nil {
		t.Fatal(err)
	}
	vc := ARMVerifyConfig{Deb: deb, Args: guest.ARM64VerifyArgs{Sample: n, Seed: 1}, NoCache: os.Getenv("KBOOST_NOCACHE") == "1"}
	v, err := VerifyARM(ctx, vc)
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
	if !rep.Predicted {
		t.Errorf("no prediction: %v", rep.Notes)
	}
	traced := map[string]bool{}
	addr := map[string]uint64{}
	for _, f := range rep.Funcs {
		traced[f.Name], addr[f.Name] = f.Traced, f.Addr
	}
	mcount := map[uint64]bool{}
	if v.Tables != nil {
		for _, a := range v.Tables.Ftrace {
			mcount[a] = true
		}
	}
	for _, f := range rep.Funcs {
		for a := f.Addr; a < f.Addr+f.Size; a += 4 {
			traced[f.Name] = traced[f.Name] || mcount[a]
		}
	}
	sites, optimized := 0, 0
	for i := range rep.Records {
		r := &rep.Records[i]
		switch {
		case !r.Boundary && r.Kernel.Errno != "EINVAL":
			t.Errorf("%s+%#x (misaligned): kernel %+v, want EINVAL", r.Func, r.Off, r.Kernel)
		case !traced[r.Func] && r.Kernel.Errno != "EINVAL":
			t.Errorf("%s+%#x (notrace function): kernel %+v, want EINVAL", r.Func, r.Off, r.Kernel)
		case mcount[addr[r.Func]+r.Off] && r.Kernel.Errno != "EINVAL":
			t.Errorf("%s+%#x (bl __gnu_mcount_nc): kernel %+v, want EINVAL", r.Func, r.Off, r.Kernel)
		}
		if mcount[addr[r.Func]+r.Off] {
			sites++
		}
		if r.Kernel.Ftrace {
			t.Errorf("%s+%#x: [FTRACE] on arm (no KPROBES_ON_FTRACE)", r.Func, r.Off)
		}
		if r.Kernel.Optimized {
			optimized++
		}
	}
	t.Logf("%d mcount call sites probed; %d probes [OPTIMIZED]", sites, optimized)
	// The slots the host read: each inside a kprobe_insn_page the kernel
	// listed, on a slot boundary, ending in mov pc, lr, held by one accepted
	// boundary probe of its round.
	if !rep.SlotsRead {
		t.Errorf("slot pages not read: %v", rep.Notes)
	}
	pages := map[uint64]bool{}
	for _, p := range rep.SlotPages {
		pages[p] = true
	}
	slots := 0
	held := map[[2]uint64]string{}
	for i := range rep.Records {
		r := &rep.Records[i]
		if r.Kernel.Slot == "" {
			continue
		}
		slots++
		switch {
		case !strings.HasSuffix(r.Kernel.Slot, "0ef0a0e1") || len(r.Kernel.Slot) != 16:
			t.Errorf("%s+%#x: slot %s does not end in mov pc, lr", r.Func, r.Off, r.Kernel.Slot)
		case !pages[r.Kernel.SlotAddr&^0xFFF] || r.Kernel.SlotAddr%8 != 0:
			t.Errorf("%s+%#x: slot at %#x, not a slot of the pages %#x", r.Func, r.Off, r.Kernel.SlotAddr, rep.SlotPages)
		case r.Kernel.Errno != "" || !r.Boundary:
			t.Errorf("%s+%#x: a slot for a refused or misaligned probe", r.Func, r.Off)
		}
		k := [2]uint64{uint64(r.Round), r.Kernel.SlotAddr}
		if other, dup := held[k]; dup {
			t.Errorf("%s+%#x and %s share the slot at %#x in round %d", r.Func, r.Off, other, r.Kernel.SlotAddr, r.Round)
		}
		held[k] = fmt.Sprintf("%s+%#x", r.Func, r.Off)
	}
	t.Logf("%d probes with a slot, read by the host from %d slot pages", slots, len(rep.SlotPages))
	if slots == 0 {
		t.Error("no probe has a slot")
	}
	if sites == 0 {
		t.Error("no mcount call site among the probes")
	}
	if os.Getenv("KBOOST_ARM_STRICT") != "0" {
		for _, f := range guest.ARMFields {
			if s.Disagree[f] > 0 {
				t.Errorf("%s: %d disagreements with %s", f, s.Disagree[f], rep.Policy)
			}
		}
	}
}
