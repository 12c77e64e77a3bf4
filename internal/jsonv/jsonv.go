package jsonv

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrSyntax is what the Unmarshal methods return, wrapped, for a value that
// is not in the vocabulary's form.
var ErrSyntax = errors.New("jsonv: bad value")

// Addr is an address, "0x..." in JSON.
type Addr uint64

// String is the address as JSON holds it ("0xffffffff81000000").
func (a Addr) String() string { return "0x" + strconv.FormatUint(uint64(a), 16) }

// MarshalText writes the "0x..." form (a JSON string, and a map key).
func (a Addr) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads the "0x..." form.
func (a *Addr) UnmarshalText(b []byte) error {
	s := string(b)
	h, ok := strings.CutPrefix(s, "0x")
	if !ok {
		return fmt.Errorf("%w: address %q: want 0x-prefixed hex", ErrSyntax, s)
	}
	v, err := strconv.ParseUint(h, 16, 64)
	if err != nil {
		return fmt.Errorf("%w: address %q: want 0x-prefixed hex", ErrSyntax, s)
	}
	*a = Addr(v)
	return nil
}

// Bytes is a byte string, "48 8b 05" in JSON.
type Bytes []byte

// Hex writes b as the vocabulary's byte string.
func Hex(b []byte) string {
	out := make([]byte, 0, 3*len(b))
	for i, c := range b {
		if i > 0 {
			out = append(out, ' ')
		}
		out = append(out, hexDigits[c>>4], hexDigits[c&15])
	}
	return string(out)
}

const hexDigits = "0123456789abcdef"

// MarshalText writes the spaced hex form.
func (b Bytes) MarshalText() ([]byte, error) { return []byte(Hex(b)), nil }

// UnmarshalText reads spaced or unspaced hex.
func (b *Bytes) UnmarshalText(t []byte) error {
	v, err := ParseHex(string(t))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// ParseHex reads a byte string written by Hex, or the same without spaces.
func ParseHex(s string) ([]byte, error) {
	v, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		return nil, fmt.Errorf("%w: bytes %q: want hex bytes such as \"48 8b 05\"", ErrSyntax, s)
	}
	return v, nil
}
