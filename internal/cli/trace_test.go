package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/schemacheck"
)

// traceTarget builds ptprobe's test program with gcc.
func traceTarget(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("kboost trace runs on linux/amd64")
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc: %v (scripts/setup.sh installs it)", err)
	}
	bin := filepath.Join(t.TempDir(), "target")
	if out, err := exec.Command(gcc, "-O2", "-fno-omit-frame-pointer", "-pthread", "-o", bin, "../../ptprobe/testdata/target.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// TestTraceUsage: each calling mistake is one line naming the fix, exit 2,
// and nothing is started.
func TestTraceUsage(t *testing.T) {
	bin := traceTarget(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "--probe", "work"}, "either --pid P or -- CMD"},
		{[]string{"trace", "--probe", "work", "--mode", "fast", "--", bin}, `unknown mode "fast"`},
		{[]string{"trace", "--", bin, "calls", "1"}, "no probe point"},
		{[]string{"trace", "--probe", "nosuch", "--", bin}, "no function nosuch"},
		{[]string{"trace", "--probe", "work+0x1", "--", bin}, "not an instruction boundary"},
		{[]string{"trace", "--probe", "work", "--probe", "work+0", "--", bin}, "are the same address"},
		{[]string{"trace", "--probe", "work", "--", filepath.Join(t.TempDir(), "none")}, "no such file"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line with %q", c.args, code, stderr, c.want)
		}
	}
}

// TestTraceJSON: the plan and the counts go to --out as JSON lines; the
// counts are the calls the program made.
func TestTraceJSON(t *testing.T) {
	bin := traceTarget(t)
	out := filepath.Join(t.TempDir(), "trace.jsonl")
	_, stderr, code := run(t, "trace", "--mode", "jump", "--probe", "work", "--probe", "branchy", "--json", "--args", "--out", out, "--", bin, "calls", "150", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := os.ReadFile(out); err != nil {
		t.Fatal(err)
	} else if err := schemacheck.Validate("trace", b); err != nil {
		t.Error(err)
	}
	var installs int
	hits := map[string]int{}
	var sum struct {
		Summary struct {
			Probes []struct {
				Point   string   `json:"point"`
				Mode    string   `json:"mode"`
				Addr    string   `json:"addr"`
				Hits    uint64   `json:"hits"`
				Reasons []string `json:"reasons"`
			} `json:"probes"`
			Status int `json:"status"`
		} `json:"summary"`
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, `{"install":`):
			installs++
		case strings.HasPrefix(line, `{"hit":{"point":`):
			var h struct {
				Hit struct {
					Point string   `json:"point"`
					Args  []string `json:"args"`
				} `json:"hit"`
			}
			if err := json.Unmarshal([]byte(line), &h); err != nil || len(h.Hit.Args) != 6 {
				t.Errorf("hit record %q: %v", line, err)
			}
			hits[h.Hit.Point]++
		case strings.HasPrefix(line, `{"summary":`):
			if err := json.Unmarshal([]byte(line), &sum); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("unexpected line %q", line)
		}
	}
	if installs != 2 || len(sum.Summary.Probes) != 2 || hits["work"] != 300 || hits["branchy"] != 300 {
		t.Fatalf("%d installs, hit records %v (want 300 of each: work's from the jump's ring), summary %+v", installs, hits, sum)
	}
	for i, want := range []string{"jump", "emulate"} {
		p := sum.Summary.Probes[i]
		if p.Mode != want || p.Hits != 300 || !strings.HasPrefix(p.Addr, "0x") || p.Reasons == nil {
			t.Errorf("%s: %+v, want %s with 300 hits", p.Point, p, want)
		}
	}
}

// TestTraceSIGINT: SIGINT to kboost attached with --pid removes the probes
// and releases the process, which keeps running; kboost exits 130.
func TestTraceSIGINT(t *testing.T) {
	bin := traceTarget(t)
	tracee := exec.Command(bin, "sleep", "0")
	pipe, _ := tracee.StdoutPipe()
	if err := tracee.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { tracee.Process.Kill(); tracee.Wait() }()
	if _, err := bufio.NewReader(pipe).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "rec")
	codec := make(chan int, 1)
	go func() {
		_, _, code := run(t, "trace", "--pid", itoa(tracee.Process.Pid), "--probe", "work", "--mode", "jump", "--out", out)
		codec <- code
	}()
	status := "/proc/" + itoa(tracee.Process.Pid) + "/status"
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(status); strings.Contains(string(b), "TracerPid:\t") && !strings.Contains(string(b), "TracerPid:\t0\n") {
			break
		}
	}
	time.Sleep(500 * time.Millisecond)
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case code := <-codec:
		if code != 130 {
			t.Errorf("kboost exit %d, want 130", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("kboost did not stop on SIGINT")
	}
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), "work") || !strings.Contains(string(b), "detached") {
		t.Errorf("records: %s", b)
	}
	time.Sleep(100 * time.Millisecond)
	st, _ := os.ReadFile("/proc/" + itoa(tracee.Process.Pid) + "/stat")
	if s := string(st); s == "" || strings.Contains(s[strings.LastIndexByte(s, ')'):], ") Z") || strings.Contains(s[strings.LastIndexByte(s, ')'):], ") t") {
		t.Errorf("tracee after release: %q", s)
	}
}

// TestBenchUsage: kboost bench takes no arguments and at least one run;
// a mistake is one line, exit 2, and nothing is measured.
func TestBenchUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "extra"}, "takes no arguments"},
		{[]string{"bench", "--runs", "0"}, "want 1 to 100"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line with %q", c.args, code, stderr, c.want)
		}
	}
}
