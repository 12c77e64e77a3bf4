package opcodes_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/kboost/kboost/opcodes"
	"github.com/kboost/kboost/opcodes/internal/armspec"
)

// TestARMTablesFresh fails when a64_tables.go does not match what the
// generator makes from spec/arm64.spec: run `go generate ./opcodes`.
func TestARMTablesFresh(t *testing.T) {
	s, err := armspec.ParseFile("spec/arm64.spec")
	if err != nil {
		t.Fatal(err)
	}
	want, err := armspec.Generate(s, armspec.Cmdline)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("a64_tables.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("a64_tables.go is stale: run `go generate ./opcodes`")
	}
	for _, p := range armspec.Shadowed(s) {
		t.Errorf("spec/%s can never match: %s covers it", p[1].Pos(), p[0].Pos())
	}
}

// TestA64LookupIndex checks the generated index against a scan of all ops.
func TestA64LookupIndex(t *testing.T) {
	x := uint32(0x9E3779B9)
	for i := 0; i < 200000; i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		var want *opcodes.ArmOp
		for k := range opcodes.A64.Ops {
			if opcodes.A64.Ops[k].Match(x) {
				want = &opcodes.A64.Ops[k]
				break
			}
		}
		if got := opcodes.A64.Lookup(x); got != want {
			t.Fatalf("Lookup(%08x) = %v, scan finds %v", x, got, want)
		}
	}
}

// TestA64BitMask checks DecodeBitMasks on immediates from the Arm ARM's
// examples of logical immediates.
func TestA64BitMask(t *testing.T) {
	cases := []struct {
		n, immr, imms uint32
		sf            bool
		want          uint64
		ok            bool
	}{
		{1, 0, 0, true, 1, true},                     // #0x1
		{0, 0, 0x3c, true, 0x5555555555555555, true}, // #0x5555...
		{1, 0, 0x3e, true, 0x7fffffffffffffff, true}, // 63 ones
		{1, 0, 0x3f, true, 0, false},                 // all ones: reserved
		{0, 0, 0x1e, false, 0x7fffffff, true},        // w: 31 ones
		{0, 1, 0, false, 0x80000000, true},           // w: one bit rotated right by 1
		{0, 0x20, 0x1f, true, 0, false},              // size 32, s = 31: reserved
		{1, 0, 0, false, 0, false},                   // N=1 in 32-bit: reserved
	}
	for _, c := range cases {
		got, ok := opcodes.A64BitMask(c.n, c.immr, c.imms, c.sf)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("A64BitMask(%d, %#x, %#x, %v) = %#x, %v; want %#x, %v", c.n, c.immr, c.imms, c.sf, got, ok, c.want, c.ok)
		}
	}
}

// TestArmNames checks that every class, flag and condition has a name the
// spec parser accepts.
func TestArmNames(t *testing.T) {
	for c := opcodes.ArmClass(0); c < opcodes.NumArmClasses; c++ {
		if got, ok := opcodes.ParseArmClass(c.String()); !ok || got != c {
			t.Errorf("class %d: name %q does not parse back", c, c)
		}
	}
	for c := opcodes.ArmCond(1); c < opcodes.NumArmConds; c++ {
		if got, ok := opcodes.ParseArmCond(c.String()); !ok || got != c {
			t.Errorf("cond %d: name %q does not parse back", c, c)
		}
	}
	for f := opcodes.ArmFlags(1); f <= opcodes.ArmGroup; f <<= 1 {
		if got, ok := opcodes.ParseArmFlag(f.String()); !ok || got != f {
			t.Errorf("flag %#x: name %q does not parse back", uint32(f), f)
		}
	}
}
