package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kboost/kboost/loader"
)

// TestProbeBadRequests: malformed points never reach the kernel (exit 2, one
// line naming the field), and a machine without kprobe_events gets the mount
// hint or the root requirement, not a stack of errors.
func TestProbeBadRequests(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"probe", "add", "vfs_read;reboot"}, "bad symbol"},
		{[]string{"probe", "add", "vfs_read+010"}, "octal"},
		{[]string{"probe", "watch", "vfs_read+1%return"}, "return probe goes on a function entry"},
		{[]string{"probe", "add", "vfs_read\n-:kboost/x"}, "bad symbol"},
		{[]string{"probe", "add", "0x1234"}, "not a kernel address"},
		{[]string{"probe", "add", "kernel:0x400000"}, "not a kernel address"},
		{[]string{"probe", "add", "0xffffffff81000000+4"}, "hex digits"},
		{[]string{"probe", "watch", "0xffffffff81000000%return"}, "hex digits"},
		{[]string{"vm", "verify", "--kernel", "nosuch", "--sample", "3"}, "--kernel"},
		{[]string{"vm", "verify"}, "choose functions"},
		{[]string{"vm", "verify", "--kernel", "boost"}, "choose functions"},
	} {
		_, stderr, code := run(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q on one line", tc.args, code, stderr, tc.want)
		}
	}
	// On this host (no kprobes, no tracefs or no kprobe_events, or not root)
	// list and sweep explain what is missing (TestErrorsNameTheCause checks
	// each cause on fixtures).
	for _, args := range [][]string{{"probe", "list"}, {"probe", "sweep"}} {
		_, stderr, code := run(t, args...)
		if _, err := os.Stat("/sys/kernel/tracing/kprobe_events"); err == nil && os.Geteuid() == 0 {
			continue
		}
		if code != 1 || !(strings.Contains(stderr, "mount -t tracefs") || strings.Contains(stderr, "root") ||
			strings.Contains(stderr, "no kprobe_events") || strings.Contains(stderr, "CONFIG_KPROBES")) {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// TestOracleVMVerifyJSON runs `kboost vm verify --json` on two functions of the
// Debian kernel and checks the output contract: one record per probe, then a
// summary whose counts match the records.
func TestOracleVMVerifyJSON(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 to boot the Debian kernel under QEMU")
	}
	stdout, stderr, code := run(t, "vm", "verify", "--kernel", "debian", "--func", "vfs_read", "--func", "ksys_read", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var records int
	var summary struct {
		Summary struct {
			Functions int            `json:"functions"`
			Probes    int            `json:"probes"`
			Agree     map[string]int `json:"agree"`
			Disagree  map[string]int `json:"disagree"`
		} `json:"summary"`
	}
	agree := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, `{"summary"`) {
			if err := json.Unmarshal([]byte(line), &summary); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var r struct {
			Func      string `json:"func"`
			Off       uint64 `json:"off"`
			Predicted struct {
				Errno string `json:"errno"`
			} `json:"predicted"`
			Kernel struct {
				Errno string `json:"errno"`
			} `json:"kernel"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Func == "" {
			t.Fatalf("record %q: %v", line, err)
		}
		records++
		if r.Predicted.Errno == r.Kernel.Errno {
			agree["errno"]++
		}
	}
	s := summary.Summary
	if s.Functions != 2 || s.Probes != records || records < 50 {
		t.Errorf("summary %+v for %d records", s, records)
	}
	if s.Agree["errno"] != agree["errno"] || s.Agree["errno"]+s.Disagree["errno"] != records {
		t.Errorf("errno agree %d disagree %d, records say %d agree of %d", s.Agree["errno"], s.Disagree["errno"], agree["errno"], records)
	}
	t.Logf("%d records; summary %+v", records, s)
}

// TestProbeAgreement: the per-field agreement of `probe add` follows the
// kernel's list entry and what was read back; fields that do not apply are
// absent, and any false field is reported as a disagreement.
func TestProbeAgreement(t *testing.T) {
	yes, no := true, false
	x := loader.Expectation{Addr: 0x1000, Optimized: true}
	if m := agreement(&x, nil, &loader.Readback{}); len(m) != 1 || m["listed"] {
		t.Errorf("not listed: %v", m)
	}
	le := &loader.ListEntry{Addr: 0x1000, Flags: []string{"OPTIMIZED"}}
	m := agreement(&x, le, &loader.Readback{SlotAgree: &yes, OptSlotAgree: &no})
	if !m["listed"] || !m["addr"] || !m["ftrace"] || !m["optimized"] || !m["slot"] || m["optslot"] || len(m) != 6 {
		t.Errorf("optimized probe with a wrong detour: %v", m)
	}
	var b strings.Builder
	printAgreement(&b, m)
	if !strings.Contains(b.String(), "DISAGREE on optslot") {
		t.Errorf("%q", b.String())
	}
	m = agreement(&loader.Expectation{Addr: 0x1000, Ftrace: true}, &loader.ListEntry{Addr: 0x1000, Flags: []string{"FTRACE"}}, &loader.Readback{})
	if _, ok := m["slot"]; ok || !m["ftrace"] {
		t.Errorf("ftrace probe: %v", m)
	}
	b.Reset()
	printAgreement(&b, m)
	if !strings.Contains(b.String(), "agrees") {
		t.Errorf("%q", b.String())
	}
}
