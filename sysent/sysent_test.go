package sysent

import (
	"bytes"
	"os"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/sysent/internal/sysspec"
)

// TestTablesFresh fails when tables.go does not match what the generator
// makes from the spec: run `go generate ./sysent`.
func TestTablesFresh(t *testing.T) {
	f, err := os.Open("spec/linux-6.1.spec")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := sysspec.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sysspec.Generate(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("tables.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("tables.go is stale: run `go generate ./sysent`")
	}
}

// TestOracleSpecFromKernel re-derives the spec from Debian's linux-source-6.1
// and compares it with the checked-in one.
func TestOracleSpecFromKernel(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 to re-derive the spec from /usr/src/linux-source-6.1.tar.xz")
	}
	const tarball = "/usr/src/linux-source-6.1.tar.xz"
	if _, err := os.Stat(tarball); err != nil {
		t.Fatalf("%v (scripts/setup.sh installs linux-source-6.1)", err)
	}
	extra, err := os.ReadFile("spec/extra-protos.h")
	if err != nil {
		t.Fatal(err)
	}
	s, err := sysspec.ExtractTarball(tarball, extra)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("spec/linux-6.1.spec")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Fatal("spec/linux-6.1.spec differs from the kernel's tables: run `go run ./gen -extract " + tarball + "`")
	}
}

// Numbers every libc agrees on (the ABI): independent of the spec.
func TestWellKnownNumbers(t *testing.T) {
	for _, c := range []struct {
		a    *decode.Arch
		name string
		nr   uint64
	}{
		{decode.X86_64, "read", 0}, {decode.X86_64, "openat", 257}, {decode.X86_64, "execve", 59},
		{decode.X86_64, "exit_group", 231}, {decode.I386, "execve", 11}, {decode.I386, "mmap2", 192},
		{decode.I386, "openat", 295}, {decode.ARM64, "openat", 56}, {decode.ARM64, "execve", 221},
		{decode.ARM64, "mmap", 222}, {decode.ARM64, "clone3", 435}, {decode.ARM, "openat", 322},
		{decode.ARM, "execve", 11}, {decode.Thumb, "mmap2", 192},
	} {
		tab := ForArch(c.a)
		if got := tab.Name(c.nr); got != c.name {
			t.Errorf("%s %d = %q, want %q", c.a.Name, c.nr, got, c.name)
		}
		if e, ok := tab.ByName(c.name); !ok || uint64(e.Nr) != c.nr {
			t.Errorf("%s ByName(%s) = %v %v", c.a.Name, c.name, e, ok)
		}
	}
	if ForAudit(0xc000003e) != TableX86_64 || ForAudit(0x40000003) != TableI386 {
		t.Error("ForAudit")
	}
}

type fakeMem map[uint64]string

func (m fakeMem) ReadString(addr uint64, max int) (string, bool, error) { return m[addr], false, nil }

func TestDecode(t *testing.T) {
	e, _ := TableX86_64.ByName("openat")
	v := TableX86_64.Decode(e, [6]uint64{^uint64(99), 0x1000, 0o2000000 | 0o100 | 1, 0o644}, fakeMem{0x1000: "/etc/x"})
	var got []string
	for _, a := range v {
		got = append(got, a.Text)
	}
	want := []string{"AT_FDCWD", `"/etc/x"`, "O_WRONLY|O_CREAT|O_CLOEXEC", "0644"}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("arg %d = %q, want %q", i, got[i], want[i])
		}
	}
	e, _ = TableARM.ByName("openat")
	if s := TableARM.Decode(e, [6]uint64{3, 0, 0o40000, 0}, nil)[2].Text; s != "O_RDONLY|O_DIRECTORY" {
		t.Errorf("arm O_DIRECTORY: %q", s)
	}
	if s, _ := TableI386.Result(-1, true); s != "-1 EPERM" {
		t.Errorf("result %q", s)
	}
}
