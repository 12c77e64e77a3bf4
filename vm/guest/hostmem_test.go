package guest

import (
	"errors"
	"strings"
	"testing"
)

func TestMemProtocolRoundTrip(t *testing.T) {
	r := MemRequest{Seq: 7, Addr: 0xbf000000, Len: 8}
	line := FormatMemRequest("n0nce", r)
	// Kernel text before the marker on the same line does not hide it.
	got, ok, err := ParseMemRequest("[  1.0] x "+line, "n0nce")
	if !ok || err != nil || got != r {
		t.Fatalf("ParseMemRequest(%q) = %+v %v %v", line, got, ok, err)
	}
	if _, ok, _ := ParseMemRequest(line, "other"); ok {
		t.Error("a request of another run was taken")
	}
	if _, ok, _ := ParseMemRequest("KBOOST-MEMR 7 00", "n0nce"); ok {
		t.Error("an answer taken for a request")
	}
	data := []byte{1, 2, 3, 4, 5, 6, 7, 0xff}
	b, ok, err := ParseMemReply(FormatMemReply(7, data, nil), r)
	if !ok || err != nil || string(b) != string(data) {
		t.Fatalf("reply: %x %v %v", b, ok, err)
	}
	_, ok, err = ParseMemReply(FormatMemReply(7, nil, errors.New("Invalid addr\n0xbf000000")), r)
	var he *HostMemError
	if !ok || !errors.As(err, &he) || he.Msg != "Invalid addr 0xbf000000" {
		t.Errorf("error reply: %v %v", ok, err)
	}
	for _, bad := range []string{"KBOOST-MEMR 8 0102030405060708", "KBOOST-MEMR 7 0102", "KBOOST-MEMR 7 zz", "KBOOST-MEMR x 00"} {
		if _, ok, err := ParseMemReply(bad, r); !ok || !errors.Is(err, ErrMemLine) {
			t.Errorf("%q: %v %v, want ErrMemLine", bad, ok, err)
		}
	}
	for _, bad := range []string{"KBOOST-MEM n0nce 0 10 8", "KBOOST-MEM n0nce 1 zz 8", "KBOOST-MEM n0nce 1 10 4097", "KBOOST-MEM n0nce 1 10"} {
		if _, ok, err := ParseMemRequest(bad, "n0nce"); !ok || !errors.Is(err, ErrMemLine) {
			t.Errorf("%q: %v %v, want ErrMemLine", bad, ok, err)
		}
	}
}

func FuzzParseMemRequest(f *testing.F) {
	f.Add(FormatMemRequest("n", MemRequest{Seq: 1, Addr: 0x10, Len: 4}))
	f.Add("KBOOST-MEM n 1 ffffffffffffffff 4096")
	f.Fuzz(func(t *testing.T, line string) {
		r, ok, err := ParseMemRequest(line, "n")
		if ok && err == nil {
			if r.Seq < 1 || r.Len < 1 || r.Len > MaxMemRead {
				t.Fatalf("accepted %+v", r)
			}
			if again, ok, err := ParseMemRequest(FormatMemRequest("n", r), "n"); !ok || err != nil || again != r {
				t.Fatalf("round trip %+v -> %+v", r, again)
			}
		}
	})
}

func FuzzParseMemReply(f *testing.F) {
	f.Add(FormatMemReply(3, []byte("abcd"), nil), 3, 4)
	f.Add("KBOOST-MEMR 3 ERR no", 3, 4)
	f.Fuzz(func(t *testing.T, line string, seq, n int) {
		r := MemRequest{Seq: seq, Len: n}
		b, ok, err := ParseMemReply(line, r)
		if ok && err == nil && len(b) != n {
			t.Fatalf("%d bytes for a request of %d", len(b), n)
		}
		if !ok && strings.Contains(line, MarkMemReply+" ") {
			t.Fatalf("answer line %q not recognised", line)
		}
	})
}
