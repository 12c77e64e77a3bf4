//go:build linux

package kimage

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenMappedMatchesOpen opens the same ELF both ways (the test binary
// itself, and a non-ELF file that must fall back) and compares what they see.
func TestOpenMappedMatchesOpen(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenMapped(exe)
	if err != nil {
		t.Fatal(err)
	}
	if b.Image() == nil {
		t.Fatal("OpenMapped did not map the ELF")
	}
	if len(a.Sections) != len(b.Sections) || a.Symbols.Len() != b.Symbols.Len() {
		t.Fatalf("sections %d vs %d, symbols %d vs %d", len(a.Sections), len(b.Sections), a.Symbols.Len(), b.Symbols.Len())
	}
	for i := range a.Sections {
		da, errA := a.Sections[i].Data()
		db, errB := b.Sections[i].Data()
		if (errA == nil) != (errB == nil) || !bytes.Equal(da, db) {
			t.Fatalf("section %s differs (errors %v, %v)", a.Sections[i].Name, errA, errB)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	other := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(other, []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errA := Open(other)
	_, errB := OpenMapped(other)
	if (errA == nil) != (errB == nil) || (errA != nil && errA.Error() != errB.Error()) {
		t.Fatalf("non-ELF: Open says %v, OpenMapped says %v", errA, errB)
	}
}
