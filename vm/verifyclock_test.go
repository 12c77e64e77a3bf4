package vm

import (
	"strings"
	"testing"
	"time"
)

// The figures of the Debian 7.2.13 boot whose guest clock ran fast (its
// step: 4h02m37s by its clock; the boot: 2m46s by the host's) and of a
// normal 6.12.117 boot (1m45s in a 1m57s boot).
func TestGuestClockNote(t *testing.T) {
	fast := guestClockNote(4*time.Hour+2*time.Minute+37*time.Second, 2*time.Minute+46*time.Second)
	if !strings.Contains(fast, "ran fast") || !strings.Contains(fast, "(88x)") {
		t.Errorf("7.2 boot: %q", fast)
	}
	if n := guestClockNote(time.Minute+45*time.Second, time.Minute+57*time.Second); n != "" {
		t.Errorf("6.12 boot: %q, want no note", n)
	}
	if n := guestClockNote(time.Minute, 0); n != "" {
		t.Errorf("no host time: %q", n)
	}
}
