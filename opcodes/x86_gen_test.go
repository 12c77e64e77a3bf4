package opcodes

import (
	"bytes"
	"os"
	"testing"

	"github.com/kboost/kboost/opcodes/internal/spec"
)

// TestGeneratedTablesFresh fails when x86_tables.go does not match what the
// generator makes from spec/x86.spec: run `go generate ./opcodes`.
func TestGeneratedTablesFresh(t *testing.T) {
	f, err := os.Open("spec/x86.spec")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := spec.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	want, err := spec.Generate(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("x86_tables.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("x86_tables.go is stale: run `go generate ./opcodes`")
	}
}

// TestEveryOneByteOpcodeDefined checks that the one-byte map has no hole: every
// byte is an opcode, a prefix or an escape on some x86 processor.
func TestEveryOneByteOpcodeDefined(t *testing.T) {
	for i := 0; i < 256; i++ {
		if !TableFor(int(MapOne))[i].Defined() {
			t.Errorf("one-byte opcode %02x missing from spec", i)
		}
	}
}
