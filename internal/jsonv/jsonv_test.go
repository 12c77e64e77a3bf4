package jsonv

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestVocabulary: the JSON of an Addr and of Bytes is the documented text
// (written out here, as README.md shows it), and reads back.
func TestVocabulary(t *testing.T) {
	type rec struct {
		Addr  Addr  `json:"addr"`
		Bytes Bytes `json:"bytes"`
	}
	in := rec{Addr: 0xffffffff81000000, Bytes: Bytes{0x48, 0x8b, 0x05}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"addr":"0xffffffff81000000","bytes":"48 8b 05"}`
	if string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var out rec
	if err := json.Unmarshal([]byte(`{"addr":"0xffffffff81000000","bytes":"488b05"}`), &out); err != nil || out.Addr != in.Addr || string(out.Bytes) != string(in.Bytes) {
		t.Fatalf("read back %+v, %v", out, err)
	}
	for _, bad := range []string{`{"addr":"ffff"}`, `{"addr":"0xzz"}`, `{"bytes":"4"}`, `{"bytes":"zz"}`} {
		if err := json.Unmarshal([]byte(bad), &out); !errors.Is(err, ErrSyntax) {
			t.Errorf("%s: error %v, want ErrSyntax", bad, err)
		}
	}
}

// FuzzBytes: any text either reads as bytes whose Hex reads back the same,
// or is refused with ErrSyntax.
func FuzzBytes(f *testing.F) {
	f.Add("48 8b 05")
	f.Add("0")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseHex(s)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		again, err := ParseHex(Hex(b))
		if err != nil || string(again) != string(b) {
			t.Fatalf("%q: % x, again % x (%v)", s, b, again, err)
		}
		var a Addr
		if a.UnmarshalText([]byte(s)) == nil {
			var a2 Addr
			if err := a2.UnmarshalText([]byte(a.String())); err != nil || a2 != a {
				t.Fatalf("addr %q: %v", s, err)
			}
		}
	})
}
