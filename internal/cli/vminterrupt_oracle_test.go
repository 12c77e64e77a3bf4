//go:build linux && amd64

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/procstat"
)

// TestOracleVMVerifyInterrupted: SIGINT while `vm verify` has its guest
// booting stops QEMU, removes the guest's files (the initramfs QEMU was given)
// and exits 130 with "interrupted" on stderr.
func TestOracleVMVerifyInterrupted(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 to boot Debian kernels under QEMU")
	}
	cmd := exec.Command(kboostBinary(t), "vm", "verify", "--sample", "3")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The kernel package may be downloaded first: wait for the guest.
	var qemu int
	var initrd string
	for deadline := time.Now().Add(10 * time.Minute); qemu == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no QEMU started by vm verify in 10 minutes; stderr:\n%s", errb.String())
		}
		if cmd.ProcessState != nil {
			t.Fatalf("vm verify ended before booting: %s", errb.String())
		}
		qemu, initrd = childQEMU(cmd.Process.Pid)
	}
	time.Sleep(3 * time.Second) // the guest is booting
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("vm verify still running a minute after SIGINT; stderr:\n%s", errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted || !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("exit %d (want %d); stderr:\n%s", code, ExitInterrupted, errb.String())
	}
	if st, err := procstat.Read(qemu); err == nil && !st.Zombie() {
		t.Errorf("QEMU (pid %d) still running after vm verify exited", qemu)
	}
	if initrd != "" {
		if _, err := os.Stat(initrd); err == nil {
			t.Errorf("the guest's initramfs %s is left behind", initrd)
		}
	}
	t.Logf("SIGINT during boot: exit %d, QEMU pid %d gone, initramfs %s removed", cmd.ProcessState.ExitCode(), qemu, initrd)
}

// childQEMU finds a qemu-system process whose parent is pid and returns its
// pid and the -initrd file it was given.
func childQEMU(pid int) (int, string) {
	for _, p := range procstat.All() {
		args, _ := procstat.Cmdline(p.Pid)
		if p.PPid != pid || len(args) == 0 || !strings.Contains(filepath.Base(args[0]), "qemu-system") {
			continue
		}
		for j, a := range args {
			if a == "-initrd" && j+1 < len(args) {
				return p.Pid, args[j+1]
			}
		}
		return p.Pid, ""
	}
	return 0, ""
}
