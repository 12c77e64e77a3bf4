package decode

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ErrHex is what ParseHex returns, wrapped in a *HexError, for text that is
// not instruction bytes.
var ErrHex = errors.New("not hex instruction bytes")

// ErrTrailing is what DecodeOne returns, wrapped in a *DecodeError, when bytes
// follow the one instruction asked for.
var ErrTrailing = errors.New("bytes after the instruction")

// HexError says which token of a hex input is wrong and why.
type HexError struct {
	Token string // the offending token ("" for the whole input)
	Why   string
}

func (e *HexError) Error() string {
	if e.Token == "" {
		return fmt.Sprintf("%v: %s", ErrHex, e.Why)
	}
	return fmt.Sprintf("%v: %q: %s", ErrHex, e.Token, e.Why)
}

func (e *HexError) Unwrap() error { return ErrHex }

// WordSize is the unit a's instructions are written in when printed as
// numbers, as objdump prints them: 4 for an A64 or A32 word, 2 for a Thumb
// halfword, 1 (bytes) for x86.
func (a *Arch) WordSize() int { return a.InsnAlign }

// ParseHex reads instruction bytes written as hex, the one input rule of
// every kboost command that takes them:
//
//   - bytes in memory order: "1f 20 03 d5", "1f2003d5", `\x1f\x20`, "1f,20"
//     (tokens split by white space, commas or colons; a byte may not straddle
//     two tokens);
//   - a token with a 0x prefix, and every token when words is set, is one
//     number of a.WordSize() bytes (8 hex digits for an A64/A32 word, 4 for a
//     Thumb halfword; an 8-digit Thumb token is a 32-bit instruction, first
//     halfword first, as objdump prints "e92d 4ff0") stored little-endian.
//     x86 has no words: its 0x tokens are bytes like the others.
//
// The error is a *HexError (ErrHex).
func (a *Arch) ParseHex(args []string, words bool) ([]byte, error) {
	var out []byte
	for _, arg := range args {
		toks := strings.FieldsFunc(arg, func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == ',' || r == ':'
		})
		for _, t := range toks {
			var err error
			if out, err = a.appendToken(out, t, words); err != nil {
				return nil, err
			}
		}
	}
	if len(out) == 0 {
		return nil, &HexError{Why: "no bytes given"}
	}
	return out, nil
}

func (a *Arch) appendToken(out []byte, t string, words bool) ([]byte, error) {
	digits := t
	word := words
	if p := strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X"); p != t {
		digits, word = p, true
	}
	if strings.Contains(digits, `\x`) {
		if word {
			return nil, &HexError{t, `\x bytes cannot be words`}
		}
		digits = strings.ReplaceAll(digits, `\x`, "")
	}
	n := a.WordSize()
	if !word || n == 1 {
		if len(digits)%2 == 1 {
			return nil, &HexError{t, "odd number of hex digits: give whole bytes"}
		}
		b, err := hex.DecodeString(digits)
		if err != nil {
			return nil, &HexError{t, "not hex digits"}
		}
		return append(out, b...), nil
	}
	b, err := hex.DecodeString(digits)
	if err != nil || (len(b) != n && !(n == 2 && len(b) == 4)) {
		want := fmt.Sprintf("%d hex digits", 2*n)
		if n == 2 {
			want = "4 hex digits (a halfword) or 8 (a 32-bit instruction, first halfword first)"
		}
		return nil, &HexError{t, fmt.Sprintf("a %s word is %s", a.Name, want)}
	}
	// b is the number big-endian (as written); memory holds each unit little-endian.
	for i := 0; i < len(b); i += n {
		switch n {
		case 2:
			out = binary.LittleEndian.AppendUint16(out, binary.BigEndian.Uint16(b[i:]))
		default:
			out = binary.LittleEndian.AppendUint32(out, binary.BigEndian.Uint32(b[i:]))
		}
	}
	return out, nil
}

// DecodeOne decodes b as exactly one instruction at addr: a short b is a
// *DecodeError wrapping ErrTruncated, bytes after the instruction one
// wrapping ErrTrailing (inst then holds the instruction). Other decode errors
// are returned as Decode returns them.
func (a *Arch) DecodeOne(b []byte, addr uint64) (Inst, error) {
	var inst Inst
	err := a.Decode(&inst, b, addr)
	if err == nil && inst.Len < len(b) {
		err = &DecodeError{Addr: addr, Len: inst.Len, Err: ErrTrailing,
			Why: fmt.Sprintf("a %d-byte instruction, then %d more bytes (give one instruction)", inst.Len, len(b)-inst.Len)}
	}
	return inst, err
}
