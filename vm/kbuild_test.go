package vm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckKconfig(t *testing.T) {
	cfg := "CONFIG_KPROBES=y\n# CONFIG_OPTPROBES is not set\nCONFIG_MODULES=m\nCONFIG_PREEMPTION=y\nCONFIG_KPROBES_X=y\n"
	missing, present := checkKconfig(cfg, []string{"KPROBES", "OPTPROBES", "MODULES", "KPROBE"}, []string{"PREEMPTION", "SMP"})
	if strings.Join(missing, ",") != "OPTPROBES,MODULES,KPROBE" || strings.Join(present, ",") != "PREEMPTION" {
		t.Errorf("missing %v present %v", missing, present)
	}
	e := &KconfigError{Missing: missing, Present: present, Config: "/x/.config"}
	if msg := e.Error(); !strings.Contains(msg, "CONFIG_OPTPROBES") || !strings.Contains(msg, "CONFIG_PREEMPTION") || !strings.Contains(msg, "/x/.config") {
		t.Errorf("message %q", msg)
	}
}

func TestKbuildKey(t *testing.T) {
	src := filepath.Join(t.TempDir(), "linux-source-6.1.tar.xz")
	if err := os.WriteFile(src, []byte("tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	k1, err := KbuildKey(src, BoostKernelOptions)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := KbuildKey(src, BoostKernelOptions); k != k1 {
		t.Errorf("key not stable: %s %s", k, k1)
	}
	if k, _ := KbuildKey(src, append([]string{"SMP"}, BoostKernelOptions...)); k == k1 {
		t.Error("key ignores the fragment")
	}
	if err := os.Chtimes(src, time.Unix(1, 0), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if k, _ := KbuildKey(src, BoostKernelOptions); k == k1 {
		t.Error("key ignores the tarball's mtime")
	}
	_, err = KbuildKey(filepath.Join(t.TempDir(), "none.tar.xz"), BoostKernelOptions)
	var de *KbuildDepsError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "apt-get install linux-source-6.1") {
		t.Errorf("missing tarball: %v", err)
	}
}

func TestLoadKernelBuild(t *testing.T) {
	dir := t.TempDir()
	if _, ok := loadKernelBuild(dir); ok {
		t.Fatal("empty entry loads")
	}
	for _, a := range kbuildArtifacts {
		if err := os.WriteFile(filepath.Join(dir, a[0]), []byte("6.1.1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kb, ok := loadKernelBuild(dir)
	if !ok || kb.Release != "6.1.1" || !kb.Cached || kb.BzImage != filepath.Join(dir, "bzImage") {
		t.Errorf("%+v %v", kb, ok)
	}
	os.Remove(filepath.Join(dir, "vmlinux"))
	if _, ok := loadKernelBuild(dir); ok {
		t.Error("entry without vmlinux loads")
	}
}
