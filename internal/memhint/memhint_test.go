package memhint

import "testing"

// TestPrefaultKeepsContents: the hint never changes what the slice holds,
// for slices below and above the threshold, empty or not.
func TestPrefaultKeepsContents(t *testing.T) {
	for _, n := range []int{0, 1, 4096, 3 << 20} {
		s := make([]uint32, n, n+17)
		for i := range s {
			s[i] = uint32(i) * 2654435761
		}
		Prefault(s)
		for i := range s {
			if s[i] != uint32(i)*2654435761 {
				t.Fatalf("n=%d: element %d changed", n, i)
			}
		}
	}
	Prefault([]byte(nil))
}

// TestPrefaultReadKeepsContents: the same for PrefaultRead, on a slice that
// does not start or end on a page boundary.
func TestPrefaultReadKeepsContents(t *testing.T) {
	b := make([]byte, 3<<20)
	for i := range b {
		b[i] = byte(i * 7)
	}
	PrefaultRead(b[100 : len(b)-100])
	PrefaultRead(nil)
	for i := range b {
		if b[i] != byte(i*7) {
			t.Fatalf("byte %d changed", i)
		}
	}
}
