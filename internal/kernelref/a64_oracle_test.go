package kernelref

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const a64Golden = "../../boost/testdata/linux-6.1-arm64.golden"

// TestOracleA64Golden regenerates the arm64 golden tables from the kernel
// sources (the kernel's own code, compiled for the host) and checks the
// committed files against them; KBOOST_UPDATE=1 rewrites the files instead.
func TestOracleA64Golden(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 to build the arm64 kernel-code oracle")
	}
	for _, tc := range []struct{ golden, version string }{
		{a64Golden, "6.1"},
		{"../../boost/testdata/linux-6.12-arm64.golden", "6.12"},
		{"../../boost/testdata/linux-7.2-arm64.golden", "7.2"},
	} {
		t.Run(filepath.Base(tc.golden), func(t *testing.T) { a64GoldenUpToDate(t, tc.golden, sourceFor(t, tc.version)) })
	}
}

func a64GoldenUpToDate(t *testing.T, a64Golden, tarball string) {
	o, err := OpenA64(Options{Tarball: tarball})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var buf bytes.Buffer
	if err := o.WriteA64Table(&buf); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("KBOOST_UPDATE") != "" {
		if err := os.WriteFile(a64Golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", a64Golden, buf.Len())
		return
	}
	old, err := os.ReadFile(a64Golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(old, buf.Bytes()) {
		ol, nl := strings.Split(string(old), "\n"), strings.Split(buf.String(), "\n")
		for i := 0; i < len(ol) && i < len(nl); i++ {
			if ol[i] != nl[i] {
				t.Fatalf("%s is stale at line %d:\n\tfile:   %s\n\tkernel: %s\nregenerate: KBOOST_ORACLE=1 KBOOST_UPDATE=1 go test ./internal/kernelref -run TestOracleA64Golden", a64Golden, i+1, ol[i], nl[i])
			}
		}
		t.Fatalf("%s is stale (%d lines, the kernel's code gives %d)", a64Golden, len(ol), len(nl))
	}
}

// The table's parser reads what the writer writes.
func TestA64TableRoundTrip(t *testing.T) {
	rows := A64Cases()[:300]
	rows = append(rows, A64Cases()[len(A64Cases())-60:]...)
	var b strings.Builder
	for i := range rows {
		rows[i].Kprobe, rows[i].Uprobe = "reject EINVAL", "xol"
		b.WriteString(rows[i].String() + "\n")
	}
	got, err := ReadA64Table(strings.NewReader("# c\n" + b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows back, want %d", len(got), len(rows))
	}
	for i := range rows {
		if got[i].String() != rows[i].String() {
			t.Fatalf("row %d: %q != %q", i, got[i].String(), rows[i].String())
		}
	}
	for _, bad := range []string{"zz\t-\ta\tb", "00000000\tfoo\ta\tb", "00000000\t-\ta"} {
		if _, err := ReadA64Table(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
