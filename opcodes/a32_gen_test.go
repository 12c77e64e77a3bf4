package opcodes_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/kboost/kboost/opcodes"
	"github.com/kboost/kboost/opcodes/internal/armspec"
)

// TestARM32TablesFresh fails when a generated A32/T32 table does not match
// what the generator makes from its spec file: run `go generate ./opcodes`.
func TestARM32TablesFresh(t *testing.T) {
	for _, c := range []struct{ spec, out string }{
		{"spec/arm.spec", "a32_tables.go"},
		{"spec/thumb.spec", "a32_t32_tables.go"},
	} {
		s, err := armspec.ParseFile(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		want, err := armspec.Generate(s, armspec.Cmdline)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(c.out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `go generate ./opcodes`", c.out)
		}
		for _, p := range armspec.Shadowed(s) {
			t.Errorf("spec/%s can never match: %s covers it", p[1].Pos(), p[0].Pos())
		}
	}
}

// TestARM32LookupIndex checks the generated indexes against a scan of all
// ops: random A32 words, and random T16 halfwords and T32 words.
func TestARM32LookupIndex(t *testing.T) {
	x := uint32(0x2545F491)
	for i := 0; i < 200000; i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		for _, c := range []struct {
			t *opcodes.ArmTable
			w uint32
		}{{opcodes.A32, x}, {opcodes.T32, x}, {opcodes.T32, x & 0xFFFF}} {
			var want *opcodes.ArmOp
			for k := range c.t.Ops {
				if c.t.Ops[k].Match(c.w) {
					want = &c.t.Ops[k]
					break
				}
			}
			if got := c.t.Lookup(c.w); got != want {
				t.Fatalf("%v Lookup(%08x) = %v, scan finds %v", c.t.ISA, c.w, got, want)
			}
		}
	}
}

// TestT16LinesOnlyMatchHalfwords checks the T16 convention of thumb.spec: a
// 16-bit line never matches a word whose upper halfword is set (a T32
// instruction), and every T32 line fixes a first halfword that starts a
// 32-bit instruction.
func TestT16LinesOnlyMatchHalfwords(t *testing.T) {
	for i := range opcodes.T32.Ops {
		op := &opcodes.T32.Ops[i]
		if op.Value>>16 == 0 {
			if op.Mask>>16 != 0xFFFF {
				t.Errorf("line %d: T16 line does not fix the upper halfword to zero", op.Line)
			}
			if op.Value>>11&0x1F >= 0x1D && op.Mask>>11&0x1F == 0x1F {
				t.Errorf("line %d: T16 line in the T32 prefix space", op.Line)
			}
			continue
		}
		if op.Mask>>29 != 7 || op.Value>>29 != 7 {
			t.Errorf("line %d: T32 line does not fix hw1 bits 15..13 to 111", op.Line)
		}
	}
}
