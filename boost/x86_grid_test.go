package boost

import (
	"testing"

	"github.com/kboost/kboost/decode"
)

// TestOpcodeGrid spot-checks grid cells against the 6.1 rules read by hand:
// twobyte_is_boostable (core.c:73-95) and the can_boost/prepare_emulation lists.
func TestOpcodeGrid(t *testing.T) {
	p, _ := Lookup("linux-6.1")
	one := p.OpcodeGrid(decode.MapOne, decode.Mode64)
	two := p.OpcodeGrid(decode.Map0F, decode.Mode64)
	want := []struct {
		g    *[256]Cell
		op   byte
		kind string
		v    Verdict
	}{
		{&one, 0x90, "op", Boost}, {&one, 0x74, "op", Emulate}, {&one, 0xe8, "op", Emulate},
		{&one, 0xcc, "op", Reject}, {&one, 0xcf, "op", Reject}, {&one, 0x66, "prefix", 0}, {&one, 0x48, "prefix", 0},
		{&one, 0x0f, "prefix", 0}, {&one, 0xc0, "op", SingleStep}, {&one, 0xf4, "op", SingleStep},
		{&two, 0x31, "op", Boost}, {&two, 0xa2, "op", SingleStep}, {&two, 0x84, "op", Emulate},
		{&two, 0x1f, "op", Boost}, {&two, 0xf7, "op", SingleStep}, {&two, 0x38, "prefix", 0},
		// 0F 04 is undefined: the kernel decoder still decodes it (2 bytes), and
		// twobyte bit 04 is clear.
		{&two, 0x04, "op", SingleStep},
	}
	for _, w := range want {
		c := w.g[w.op]
		if c.Kind != w.kind || (w.kind == "op" && c.Decision.Verdict != w.v) {
			t.Errorf("opcode %02x: %s %v, want %s %v", w.op, c.Kind, c.Decision.String(), w.kind, w.v)
		}
	}
	// FF is a group: /2 call indirect (emulated), /4 jmp indirect (boosted).
	ff := one[0xff]
	if !ff.Group || ff.Reg[2].Verdict != Emulate || ff.Reg[4].Verdict != Boost || ff.Reg[0].Verdict != SingleStep {
		t.Errorf("FF group: %v %v %v %v", ff.Group, ff.Reg[2].String(), ff.Reg[4].String(), ff.Reg[0].String())
	}
	// 0F 01 /0 mod=3 is the VMX group: EOPNOTSUPP.
	if c := two[0x01]; !c.Group || c.Reg[0].Errno != EOPNOTSUPP {
		t.Errorf("0F 01 /0: %v", c.Reg[0].String())
	}
	// 6.12 refines Grp3: F6 /1 not boostable, /0 boostable.
	p612, _ := Lookup("linux-6.12")
	f6 := p612.OpcodeGrid(decode.MapOne, decode.Mode64)[0xf6]
	if f6.Reg[0].Verdict != Boost || f6.Reg[1].Verdict != SingleStep {
		t.Errorf("6.12 F6: /0 %v /1 %v", f6.Reg[0].String(), f6.Reg[1].String())
	}
	if g := p.OpcodeGrid(decode.MapXOP8, decode.Mode64); g[0].Kind != "invalid" {
		t.Error("XOP map grid")
	}
}
