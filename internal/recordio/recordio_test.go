package recordio

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// calls records each Write call it gets.
type calls struct{ got [][]byte }

func (c *calls) Write(p []byte) (int, error) {
	c.got = append(c.got, bytes.Clone(p))
	return len(p), nil
}

// Every Write call the underlying writer gets ends a line, and the bytes
// are those written, in order: records of every size, around the buffer's.
func TestWholeRecords(t *testing.T) {
	for _, size := range []int{0, 16, 100, 1 << 10} {
		var c calls
		w := NewWriter(&c, size)
		var want bytes.Buffer
		for i := range 300 {
			rec := fmt.Sprintf("{\"i\":%d,\"pad\":%q}\n", i, strings.Repeat("x", i%250))
			want.WriteString(rec)
			if i%3 == 0 {
				w.WriteString(rec)
			} else {
				w.Write([]byte(rec))
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		for _, p := range c.got {
			if len(p) == 0 || p[len(p)-1] != '\n' {
				t.Fatalf("size %d: a write ends mid-record: %q", size, p[max(0, len(p)-40):])
			}
			if size > 0 && len(p) > size && bytes.Count(p, []byte("\n")) > 1 {
				t.Errorf("size %d: a batch of %d bytes exceeds the buffer", size, len(p))
			}
			got.Write(p)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("size %d: bytes differ", size)
		}
		if size >= 1<<10 && len(c.got) > want.Len()/(size/2) {
			t.Errorf("size %d: %d writes for %d bytes: not batched", size, len(c.got), want.Len())
		}
	}
}
