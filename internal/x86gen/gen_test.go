package x86gen

import (
	"bytes"
	"testing"
)

func TestDeterministic(t *testing.T) {
	for _, bits := range []int{32, 64} {
		a := New(Config{Seed: 7, Bits: bits})
		b := New(Config{Seed: 7, Bits: bits})
		c := New(Config{Seed: 8, Bits: bits})
		same := 0
		for i := range 10000 {
			x, y, z := a.Next(nil), b.Next(nil), c.Next(nil)
			if !bytes.Equal(x, y) || a.Last() != b.Last() {
				t.Fatalf("bits %d case %d: same seed gave % x and % x", bits, i, x, y)
			}
			if bytes.Equal(x, z) {
				same++
			}
		}
		if same > 2000 {
			t.Errorf("bits %d: seeds 7 and 8 agree on %d of 10000 candidates", bits, same)
		}
	}
}

func TestShape(t *testing.T) {
	for _, bits := range []int{32, 64} {
		g := New(Config{Seed: 1, Bits: bits})
		var kinds [NumKinds]int
		var sawRex, sawLong, sawRIP, sawSIB5, sawVEXMem bool
		buf := []byte{0xaa}
		for range 200000 {
			buf = g.Next(buf[:1])
			c := buf[1:]
			if buf[0] != 0xaa || len(c) < 1 || len(c) > 15 {
				t.Fatalf("bits %d: bad candidate % x (kind %v)", bits, buf, g.Last())
			}
			kinds[g.Last()]++
			i := 0
			for i < len(c) && isLegacy(c[i]) {
				i++
			}
			if i >= 6 {
				sawLong = true
			}
			if i < len(c) && c[i]&0xf0 == 0x40 && bits == 64 {
				sawRex = true
			}
			if g.Last() == KindOneByte && i+1 < len(c) && c[i] == 0x8b && c[i+1]&0xc7 == 0x05 {
				sawRIP = true
			}
			if g.Last() == Kind0F && i+3 < len(c) && c[i+2]&0xc7 == 0x04 && c[i+3]&7 == 5 {
				sawSIB5 = true
			}
			if g.Last() == KindVEX2 && i+1 < len(c) && c[i] == 0xc5 && c[i+1] < 0xc0 {
				sawVEXMem = true
			}
		}
		for k, n := range kinds {
			if n == 0 {
				t.Errorf("bits %d: kind %v never generated", bits, Kind(k))
			}
		}
		if !sawLong || !sawRIP || !sawSIB5 || !sawVEXMem || (bits == 64) != sawRex {
			t.Errorf("bits %d: long=%v rip=%v sib5=%v vexmem=%v rex=%v", bits, sawLong, sawRIP, sawSIB5, sawVEXMem, sawRex)
		}
	}
}

func isLegacy(b byte) bool {
	return bytes.IndexByte(legacyPrefixes, b) >= 0
}

func TestKindString(t *testing.T) {
	for k := range NumKinds {
		if s := k.String(); s == "" || s[0] == 'K' {
			t.Errorf("Kind(%d).String() = %q", k, s)
		}
	}
	if s := NumKinds.String(); s != "Kind(11)" {
		t.Errorf("NumKinds.String() = %q", s)
	}
}

func TestSweep(t *testing.T) {
	s := NewSweep(64)
	seen := map[string]bool{}
	n := 0
	for {
		b, ok := s.Next(nil)
		if !ok {
			break
		}
		n++
		if len(b) < 2 || len(b) > 15 {
			t.Fatalf("candidate %d: % x", n, b)
		}
		if testing.Short() {
			continue
		}
		if seen[string(b)] {
			t.Fatalf("candidate %d repeated: % x", n, b)
		}
		seen[string(b)] = true
	}
	if n != s.Len() || n < 500000 {
		t.Errorf("sweep yielded %d candidates, Len() = %d", n, s.Len())
	}
	if _, ok := s.Next(nil); ok {
		t.Error("Next after the end returned ok")
	}
	if testing.Short() {
		return
	}
	// Spot checks: every 0F opcode under F3 in memory form, every EVEX map 5 opcode.
	for op := range 256 {
		if !seen[string(append([]byte{0xf3, 0x0f, byte(op), 0x10}, tailBytes...))] {
			t.Errorf("missing f3 0f %02x /2 mem", op)
		}
		if !seen[string(append([]byte{0x62, 0xf5, 0x7c, 0x48, byte(op), 0xc1}, tailBytes...))] {
			t.Errorf("missing evex map5 %02x L2", op)
		}
	}
}
