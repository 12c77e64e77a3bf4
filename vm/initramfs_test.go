package vm

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cavaliergopher/cpio"
)

var testFiles = []File{
	{Name: "/init", Mode: 0o755, Data: []byte("#!/bin/false\n")},
	{Name: "/scenario.json", Data: []byte(`{"nonce":"x"}`)},
	{Name: "lib/modules/6.1.0/kernel/a.ko", Mode: 0o600, Data: bytes.Repeat([]byte{0, 1, 2}, 1001)},
	{Name: "/empty", Data: nil},
}

func buildTestInitramfs(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteInitramfs(&buf, testFiles); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wantEntries is the listing the archive must have: the files plus every parent
// directory, in sorted order.
var wantEntries = []string{"empty", "init", "lib", "lib/modules", "lib/modules/6.1.0", "lib/modules/6.1.0/kernel", "lib/modules/6.1.0/kernel/a.ko", "scenario.json"}

func TestInitramfsReadBack(t *testing.T) {
	raw := gunzip(t, buildTestInitramfs(t))
	if !bytes.HasPrefix(raw, []byte("070701")) {
		t.Fatalf("archive starts %q, want the newc magic 070701", raw[:6])
	}
	r := cpio.NewReader(bytes.NewReader(raw))
	var names []string
	for {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		var want *File
		for i := range testFiles {
			if strings.TrimPrefix(testFiles[i].Name, "/") == h.Name {
				want = &testFiles[i]
			}
		}
		if want == nil {
			if !h.Mode.IsDir() || h.Mode.Perm() != 0o755 {
				t.Errorf("%s: mode %v, want a 0755 directory", h.Name, h.Mode)
			}
			continue
		}
		perm := want.Mode.Perm()
		if perm == 0 {
			perm = 0o644
		}
		if !h.Mode.IsRegular() || os.FileMode(h.Mode.Perm()) != perm {
			t.Errorf("%s: mode %v, want regular %v", h.Name, h.Mode, perm)
		}
		if !bytes.Equal(data, want.Data) {
			t.Errorf("%s: %d bytes differ from the %d written", h.Name, len(data), len(want.Data))
		}
	}
	if strings.Join(names, " ") != strings.Join(wantEntries, " ") {
		t.Errorf("entries %v, want %v", names, wantEntries)
	}
}

// TestInitramfsCpioTool checks the archive with GNU cpio (Debian package cpio):
// its listing and the extracted contents.
func TestInitramfsCpioTool(t *testing.T) {
	tool, err := exec.LookPath("cpio")
	if err != nil {
		if os.Getenv("KBOOST_ORACLE") == "1" {
			t.Fatal("cpio not installed: apt-get install cpio")
		}
		t.Skip("cpio not installed (apt-get install cpio)")
	}
	raw := gunzip(t, buildTestInitramfs(t))
	list := exec.Command(tool, "-it", "--quiet")
	list.Stdin = bytes.NewReader(raw)
	out, err := list.Output()
	if err != nil {
		t.Fatalf("cpio -it: %v", err)
	}
	got := strings.Fields(string(out))
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(wantEntries, " ") {
		t.Errorf("cpio -it lists %v, want %v", got, wantEntries)
	}
	dir := t.TempDir()
	ext := exec.Command(tool, "-idm", "--quiet", "--no-absolute-filenames")
	ext.Dir = dir
	ext.Stdin = bytes.NewReader(raw)
	if b, err := ext.CombinedOutput(); err != nil {
		t.Fatalf("cpio -id: %v: %s", err, b)
	}
	for _, f := range testFiles {
		p := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(f.Name, "/")))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		if !bytes.Equal(b, f.Data) {
			t.Errorf("%s: cpio extracted %d bytes, wrote %d", f.Name, len(b), len(f.Data))
		}
		st, _ := os.Stat(p)
		if f.Mode != 0 && st.Mode().Perm() != f.Mode.Perm() {
			t.Errorf("%s: extracted mode %v, want %v", f.Name, st.Mode().Perm(), f.Mode.Perm())
		}
	}
}

func TestInitramfsDeterministic(t *testing.T) {
	a := buildTestInitramfs(t)
	rev := append([]File(nil), testFiles...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	var b bytes.Buffer
	if err := WriteInitramfs(&b, rev); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b.Bytes()) {
		t.Fatal("same files in another order gave different bytes")
	}
}

func TestInitramfsBadNames(t *testing.T) {
	for _, files := range [][]File{
		{{Name: "../etc/passwd"}},
		{{Name: "/a/../b"}},
		{{Name: ""}},
		{{Name: "/"}},
		{{Name: "a//b"}},
		{{Name: "/init"}, {Name: "init"}},
		{{Name: "/lib"}, {Name: "/lib/x"}},
	} {
		err := WriteInitramfs(io.Discard, files)
		if !errors.Is(err, ErrInitramfs) {
			t.Errorf("%v: got %v, want ErrInitramfs", files, err)
		}
	}
}
