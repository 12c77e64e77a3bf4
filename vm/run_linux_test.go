//go:build linux

package vm

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestRunQEMUMissing(t *testing.T) {
	k := t.TempDir() + "/vmlinuz"
	if err := os.WriteFile(k, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Config{Kernel: k, QEMU: "qemu-system-kboost-missing"})
	var qe *QEMUNotFoundError
	if !errors.As(err, &qe) || !strings.Contains(err.Error(), "apt-get install qemu-system-x86") {
		t.Fatalf("got %v, want a QEMUNotFoundError naming the package", err)
	}
}
