//go:build linux

package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/sysent"
)

// Issue 15's arm64 and ARM tracees: kboost's reference monitor, built for
// the guest (kboost-guest links it), traces a static program inside
// Debian's booted arm64 and armhf kernels, one boot each. The program
// (monitor/testdata/guest.c, clang for arm64; guestgo, Go for ARM) prints the system call numbers of its own
// headers, opens a file the monitor's policy denies, forks a child that
// executes the program again and exits 3. The records must name each call
// as the arch's table does, carry the numbers the program printed, show
// the openat denied with EPERM (which the program saw), the fork child's
// exec and exit followed; the output must be the native one but for that
// open, and nothing may be left running. In the same boot the backtrace
// oracle's tracees (monitorbt_oracle_linux_test.go) check the monitor's
// backtraces: arm64's .eh_frame unwinding, ARM's exception index.
func TestOracleMonitorGuestARM64(t *testing.T) {
	monitorGuest(t, "linux-image-arm64", ARM64, sysent.TableARM64, func(t *testing.T, bin string) []string {
		return []string{"clang", "--target=aarch64-linux-gnu", "-O1", "-static", "-o", bin, "../monitor/testdata/guest.c"}
	}, "aarch64-linux-gnu")
}

func TestOracleMonitorGuestARM(t *testing.T) {
	monitorGuest(t, "linux-image-armmp", ARM, sysent.TableARM, func(t *testing.T, bin string) []string {
		return []string{"go", "build", "-o", bin, "../monitor/testdata/guestgo"}
	}, "arm-linux-gnueabihf")
}

// btTriple, if not empty, is clang's target for the backtrace oracle's
// tracees (monitorbt_oracle_linux_test.go), run in the same boot.
func monitorGuest(t *testing.T, meta string, arch *Arch, tab *sysent.Table, build func(*testing.T, string) []string, btTriple string) {
	oracleGate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	deb, err := kimage.FetchDebianKernel(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "tracee")
	cmd := build(t, bin)
	if _, err := exec.LookPath(cmd[0]); err != nil {
		t.Fatalf("%s: %v (scripts/setup.sh installs it)", cmd[0], err)
	}
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Env = append(c.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch.GOARCH, "GOARM="+arch.GOARM)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, out)
	}
	var cfg = Config{Arch: arch}
	var bt *monitorBT
	var runs [][]string
	if btTriple != "" {
		bt = monitorBTBuild(t, btTriple)
		cfg.Files, runs = bt.files, bt.runs
	}
	start := time.Now()
	rep, tm, err := MonitorTrial(ctx, deb, bin, runs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("guest %s: boot+steps %.0f s, total %.0f s", rep.Machine, tm.Boot.Seconds(), time.Since(start).Seconds())
	if rep.Err != "" {
		t.Fatalf("monitor in the guest: %s", rep.Err)
	}
	// The program's own numbers.
	m := regexp.MustCompile(`nr openat=(\d+) execve=(\d+) exit_group=(\d+)`).FindStringSubmatch(rep.Native)
	if m == nil {
		t.Fatalf("native output %q: no numbers", rep.Native)
	}
	own := map[string]uint64{}
	for i, n := range []string{"openat", "execve", "exit_group"} {
		own[n], _ = strconv.ParseUint(m[i+1], 10, 64)
	}
	wantNative := "open " + MonitorTrialDeny + ": ok"
	wantTraced := "open " + MonitorTrialDeny + ": operation not permitted"
	if !strings.Contains(rep.Native, wantNative) || rep.NativeStatus != 0 {
		t.Errorf("native run: status %d, output %q: want %q", rep.NativeStatus, rep.Native, wantNative)
	}
	if got := strings.ReplaceAll(strings.ToLower(rep.Traced), wantTraced, wantNative); got != strings.ToLower(rep.Native) || rep.Status != 0 {
		t.Errorf("under the monitor: status %d, output %q; native %q (want the same but the open: %q)", rep.Status, rep.Traced, rep.Native, wantTraced)
	}
	if !strings.Contains(rep.Native, "child status 3") {
		t.Errorf("native output %q: the child did not exit 3", rep.Native)
	}
	if len(rep.Leftover) != 0 {
		t.Errorf("left running after the monitor: %v", rep.Leftover)
	}

	type line struct {
		Pid, Tid int
		Arch     string
		Syscall  string
		Nr       uint64
		Args     []struct{ Path string }
		Errno    string
		Denied   bool
		Event    string
		Status   int
		Parent   int
		Summary  *struct{ Processes, Threads, Denied int }
	}
	names := map[string]int{}
	var denied, execs, exit3, forks int
	root := 0
	sc := bufio.NewScanner(strings.NewReader(rep.Records))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("record %s: %v", sc.Bytes(), err)
		}
		switch {
		case l.Summary != nil:
			if l.Summary.Processes < 2 || l.Summary.Denied != 1 {
				t.Errorf("summary %+v: want 2 or more processes, 1 denied", *l.Summary)
			}
		case l.Event != "":
			if root == 0 {
				root = l.Pid
			}
			switch l.Event {
			case "new_thread":
				if l.Pid != l.Parent && l.Pid != root {
					forks++
				}
			case "exec":
				if l.Pid != root {
					execs++
				}
			case "exit":
				if l.Pid != root && l.Status == 3 {
					exit3++
				}
			}
		default:
			if root == 0 {
				root = l.Pid
			}
			if l.Arch != tab.Arch.Name {
				t.Errorf("record %s: arch %q, want %q", sc.Bytes(), l.Arch, tab.Arch.Name)
			}
			if want := tab.Name(l.Nr); l.Syscall != want {
				t.Errorf("record %s: %s, the table names %d %s", sc.Bytes(), l.Syscall, l.Nr, want)
			}
			if n, ok := own[l.Syscall]; ok && n != l.Nr {
				t.Errorf("record %s: %s is %d in the program's headers", sc.Bytes(), l.Syscall, n)
			}
			names[l.Syscall]++
			if l.Syscall == "openat" && len(l.Args) > 1 && l.Args[1].Path == MonitorTrialDeny {
				if !l.Denied || l.Errno != "EPERM" {
					t.Errorf("record %s: want denied with EPERM", sc.Bytes())
				}
				denied++
			}
		}
	}
	if denied != 1 {
		t.Errorf("%d openat calls of %s recorded, want 1", denied, MonitorTrialDeny)
	}
	if forks == 0 || execs == 0 || exit3 == 0 {
		t.Errorf("fork child: %d new processes, %d execs, %d exits with status 3 recorded; want each", forks, execs, exit3)
	}
	for _, n := range []string{"openat", "execve", "exit_group", "clone"} {
		if names[n] == 0 {
			t.Errorf("no %s recorded (%v)", n, names)
		}
	}
	t.Logf("%d calls by name: %v", len(names), names)
	if btTriple != "" {
		compared, agreed := monitorBTCheck(t, rep.Backtraces, bt)
		t.Logf("backtrace oracle: %d frames compared, %d agreed (%d runs)", compared, agreed, len(runs))
	}
}
