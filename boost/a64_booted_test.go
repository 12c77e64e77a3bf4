package boost

import (
	"encoding/binary"
	"testing"
)

// On booted arm64 bytes, ftrace_init_nop has turned the first patchable-entry
// NOP of every function with an ftrace record into `mov x9, x30`
// (arch/arm64/kernel/ftrace.c), so a function still starting with two NOPs
// (an assembly vector padded with NOPs, as hyp_stub_*_invalid on Debian
// 6.12) has no record: kprobe_events refuses it (EINVAL) at every offset.
func TestA64BootedEntry(t *testing.T) {
	p, _ := Lookup("linux-6.12-arm64")
	const nop, movX9LR, ret = 0xd503201f, 0xaa1e03e9, 0xd65f03c0
	for _, c := range []struct {
		words   []uint32
		booted  bool
		notrace bool
	}{
		{[]uint32{nop, nop, nop, ret}, true, true},
		{[]uint32{movX9LR, nop, nop, ret}, true, false},
		{[]uint32{nop, nop, nop, ret}, false, false}, // an Image's bytes: not yet patched
	} {
		env := p.DefaultEnv()
		env.InferNotrace, env.BootedEntry = true, c.booted
		b := make([]byte, 4*len(c.words))
		for i, w := range c.words {
			binary.LittleEndian.PutUint32(b[4*i:], w)
		}
		a, err := p.AuditFunc(Func{Name: "f", Addr: 0xffff800080010000, Bytes: b}, env)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := a.At(8)
		if a.Notrace != c.notrace || (d.Errno == EINVAL) != c.notrace {
			t.Errorf("%08x booted=%v: notrace %v, +8 %v; want notrace %v", c.words[:2], c.booted, a.Notrace, d.String(), c.notrace)
		}
	}
}
