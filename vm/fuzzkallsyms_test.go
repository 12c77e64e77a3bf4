package vm

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/kboost/kboost/kimage"
)

// FuzzCheckKallsyms: any text after 1000 plausible kallsyms lines is judged
// with a *KallsymsError or accepted; what it accepts, kimage's ParseSymbolMap
// (which the audits read a booted kernel's kallsyms with) parses too, or
// refuses with a typed error (only the all-zero-addresses check is its own).
func FuzzCheckKallsyms(f *testing.F) {
	var head bytes.Buffer
	head.WriteString("ffffffff81000000 T _text\n")
	for i := 1; i < 1000; i++ {
		fmt.Fprintf(&head, "ffffffff81%06x t f%d\n", i*16, i)
	}
	f.Add([]byte("ffffffffc0000000 t mod_fn\t[mod]\n"), true)
	f.Add([]byte("0000000000000000 T _stext\n"), false)
	f.Add([]byte("zz T x\n"), true)
	f.Fuzz(func(t *testing.T, tail []byte, withHead bool) {
		b := tail
		if withHead {
			b = append(append([]byte(nil), head.Bytes()...), tail...)
		}
		err := CheckKallsyms(b)
		if err != nil {
			var ke *KallsymsError
			if !errors.As(err, &ke) || ke.Reason == "" {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		st, err := kimage.ParseSymbolMap(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, kimage.ErrCorrupt) && !errors.Is(err, kimage.ErrFormat) &&
				!errors.Is(err, kimage.ErrPlaceholderMap) && !errors.Is(err, kimage.ErrKptrRestrict) {
				t.Fatalf("kimage refuses accepted kallsyms with an untyped error %v", err)
			}
			return
		}
		if st.Len() < 1000 {
			t.Fatalf("kimage read %d symbols from accepted kallsyms", st.Len())
		}
	})
}
