package cli

import (
	"strings"
	"testing"
	"time"
)

// TestCountFlag: counts take decimal, 1_000 and 1e6 forms; fractions,
// junk and values out of range are refused with the range.
func TestCountFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  string
	}{
		{"4", 4, ""},
		{"1_000_000", 1000000, ""},
		{"1e6", 1000000, ""},
		{"2.5e5", 250000, ""},
		{"1E9", 1000000000, ""},
		{"0", 0, "want 1 to 1e9"},
		{"-1", 0, "want 1 to 1e9"},
		{"1e10", 0, "want 1 to 1e9"},
		{"1e30", 0, "whole number"},
		{"1.5", 0, "whole number"},
		{"1.5e0", 0, "whole number"},
		{"ten", 0, "whole number"},
		{"", 0, "whole number"},
	} {
		var v int
		c := &countFlag{p: &v, min: 1, max: 1e9}
		err := c.Set(tc.in)
		switch {
		case tc.err == "" && (err != nil || v != tc.want):
			t.Errorf("%q: %d, %v; want %d", tc.in, v, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one naming %q", tc.in, err, tc.err)
		}
	}
	for v, want := range map[int]string{1: "1", 100000: "100000", 1e6: "1e6", 5e6: "5e6", 1e9: "1e9", 1 << 20: "1048576", 12e6: "12000000"} {
		if got := fmtCount(v); got != want {
			t.Errorf("fmtCount(%d) = %q, want %q", v, got, want)
		}
	}
	for d, want := range map[time.Duration]string{720 * time.Hour: "720h", 5 * time.Minute: "5m", 10 * time.Second: "10s", time.Millisecond: "1ms", 90 * time.Minute: "1h30m"} {
		if got := fmtDuration(d); got != want {
			t.Errorf("fmtDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
