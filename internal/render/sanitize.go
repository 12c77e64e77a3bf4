package render

import (
	"io"
	"unicode/utf8"
)

// cleanWriter replaces, in everything written through it, each byte that is
// not valid UTF-8 with U+FFFD and each C0 control character other than tab,
// newline and carriage return (and DEL) with its Unicode control picture
// (U+2400 + c): both are invalid in XML 1.0 and html/template lets them through.
type cleanWriter struct {
	w     io.Writer
	carry []byte // an incomplete UTF-8 sequence at the end of the last Write
	buf   []byte
}

func (c *cleanWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(c.carry) > 0 {
		p = append(c.carry, p...)
		c.carry = nil
	}
	out := c.buf[:0]
	start := 0
	for i := 0; i < len(p); {
		b := p[i]
		if b < utf8.RuneSelf {
			if b < 0x20 && b != '\t' && b != '\n' && b != '\r' || b == 0x7f {
				out = append(out, p[start:i]...)
				r := rune(0x2400) + rune(b)
				if b == 0x7f {
					r = 0x2421
				}
				out = utf8.AppendRune(out, r)
				i++
				start = i
				continue
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(p[i:]) && len(p)-i < utf8.UTFMax {
				// maybe completed by the next Write
				out = append(out, p[start:i]...)
				c.carry = append([]byte(nil), p[i:]...)
				start = len(p)
				break
			}
			out = append(out, p[start:i]...)
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
			start = i
			continue
		}
		i += size
	}
	out = append(out, p[start:]...)
	c.buf = out
	if _, err := c.w.Write(out); err != nil {
		return 0, err
	}
	return n, nil
}

// flush writes a pending incomplete sequence as U+FFFD.
func (c *cleanWriter) flush() error {
	if len(c.carry) == 0 {
		return nil
	}
	c.carry = nil
	_, err := c.w.Write([]byte(string(utf8.RuneError)))
	return err
}

// Clean returns s with invalid UTF-8 and control characters replaced as the
// output filter does (for text destined elsewhere than a template).
func Clean(s string) string {
	var b bytesWriter
	cw := &cleanWriter{w: &b}
	cw.Write([]byte(s))
	cw.flush()
	return string(b)
}

type bytesWriter []byte

func (b *bytesWriter) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }
