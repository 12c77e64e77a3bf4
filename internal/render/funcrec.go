package render

import (
	"encoding/binary"
	"errors"
)

// The audit report's workers hand their functions to the one goroutine that
// builds the report as bytes (audit.Run writes them in request order):
// AppendFuncRec encodes a FuncRec as uvarint-length-prefixed fields, which
// costs a fraction of JSON for a kernel's 2.8M boundaries.

// AppendFuncRec appends f's encoding to buf.
func AppendFuncRec(buf []byte, f *FuncRec) []byte {
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	list := func(ss []string) {
		buf = binary.AppendUvarint(buf, uint64(len(ss)))
		for _, s := range ss {
			str(s)
		}
	}
	str(f.Name)
	buf = binary.AppendUvarint(buf, f.Addr)
	buf = binary.AppendUvarint(buf, f.Size)
	buf = binary.AppendUvarint(buf, uint64(len(f.Lens)))
	for _, l := range f.Lens {
		buf = binary.AppendUvarint(buf, uint64(l))
	}
	str(f.Letters)
	list(f.Rules)
	list(f.Asm)
	str(f.Err)
	return buf
}

var errFuncRec = errors.New("audit report: corrupt function record")

// ReadFuncRecs decodes the records in b, calling fn for each (f is reused).
func ReadFuncRecs(b []byte, fn func(f *FuncRec)) error {
	var f FuncRec
	bad := false
	num := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return v
	}
	str := func() string {
		n := num()
		if bad || n > uint64(len(b)) {
			bad = true
			return ""
		}
		s := string(b[:n])
		b = b[n:]
		return s
	}
	list := func(ss []string) []string {
		n := num()
		if n > uint64(len(b)) {
			bad = true
			return ss
		}
		ss = ss[:0]
		for i := uint64(0); i < n && !bad; i++ {
			ss = append(ss, str())
		}
		return ss
	}
	for len(b) > 0 {
		f.Name = str()
		f.Addr, f.Size = num(), num()
		n := num()
		if n > uint64(len(b)) {
			return errFuncRec
		}
		f.Lens = f.Lens[:0]
		for i := uint64(0); i < n && !bad; i++ {
			f.Lens = append(f.Lens, int(num()))
		}
		f.Letters = str()
		f.Rules = list(f.Rules)
		f.Asm = list(f.Asm)
		f.Err = str()
		if bad {
			return errFuncRec
		}
		fn(&f)
	}
	return nil
}
