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

// a64HandGoldens are the arm64 tables compiled from hand trees (HandTree):
// versions no Debian suite carries.
var a64HandGoldens = []struct{ golden, version string }{
	{"../../boost/testdata/linux-6.18-arm64.golden", "6.18"},
}

// TestOracleA64GoldenHand checks the tables made from hand-fetched kernel
// files. Everywhere: the header records the provenance (repository, commit)
// and the sha256 of every input the oracle compiles. Where the files are in
// place (CacheDir/hand/linux-V): the table is regenerated from them and must
// be identical, header hashes included; KBOOST_UPDATE=1 rewrites it. CI has no
// copy of those files, so there the table stands as committed.
func TestOracleA64GoldenHand(t *testing.T) {
	for _, tc := range a64HandGoldens {
		t.Run(filepath.Base(tc.golden), func(t *testing.T) {
			tree, _, treeErr := HandTree(Options{}, tc.version)
			update := os.Getenv("KBOOST_UPDATE") != "" && treeErr == nil
			if !update {
				f, err := os.Open(tc.golden)
				if err != nil {
					t.Fatal(err)
				}
				in, err := ReadGoldenInputs(f)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"repo", "commit"} {
					if in.Provenance[k] == "" {
						t.Errorf("%s: the header has no %q provenance line", tc.golden, k)
					}
				}
				for _, m := range A64HandMembers() {
					if in.SHA256[m] == "" {
						t.Errorf("%s: the header has no sha256 for input %s", tc.golden, m)
					}
				}
				if len(in.SHA256) != len(A64HandMembers()) {
					t.Errorf("%s: %d input hashes, the oracle compiles %d files", tc.golden, len(in.SHA256), len(A64HandMembers()))
				}
				if treeErr != nil {
					t.Logf("%s was compiled from Linux %s files fetched by hand (repo %s, commit %s; sha256 of each in its header); "+
						"they are not on this machine (%v), so the table is not regenerated here: the policy tests compare kboost with it as committed",
						tc.golden, tc.version, in.Provenance["repo"], in.Provenance["commit"], treeErr)
					return
				}
			}
			if testing.Short() {
				t.Skip("-short: not building the oracle from the hand tree")
			}
			a64GoldenFrom(t, tc.golden, Options{Tree: tree}, "TestOracleA64GoldenHand")
		})
	}
}

func a64GoldenUpToDate(t *testing.T, a64Golden, tarball string) {
	a64GoldenFrom(t, a64Golden, Options{Tarball: tarball}, "TestOracleA64Golden")
}

func a64GoldenFrom(t *testing.T, a64Golden string, opts Options, test string) {
	o, err := OpenA64(opts)
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
				t.Fatalf("%s is stale at line %d:\n\tfile:   %s\n\tkernel: %s\nregenerate: KBOOST_ORACLE=1 KBOOST_UPDATE=1 go test ./internal/kernelref -run %s", a64Golden, i+1, ol[i], nl[i], test)
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
