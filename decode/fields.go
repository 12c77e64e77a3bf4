package decode

import (
	"encoding/binary"
	"fmt"
)

// Field is one named part of a decoded instruction, as explain lists it and
// the pictures draw it: Text describes it; Off and Len place it over the
// instruction's bytes (Len 0: a property, not bytes); Class groups fields
// for colouring (prefix, vex, rex, opcode, modrm, sib, disp, imm, word).
type Field struct {
	Name, Text, Class string
	Off, Len          int
}

// Fields lists the instruction's fields in the order explain shows them,
// which is also the order of their bytes. Text is empty for a span with
// nothing to say (prefix bytes the decoder did not name).
func (i *Inst) Fields() []Field {
	if i.Mode == ModeA64 || i.Mode == ModeA32 || i.Mode == ModeT32 {
		return i.armFields()
	}
	return i.x86Fields()
}

// armFields: the length and the word (or Thumb halfwords) with what selects
// its encoding group.
func (i *Inst) armFields() []Field {
	f := []Field{{Name: "length", Text: fmt.Sprintf("%d bytes", i.Len)}}
	w := Field{Name: "word", Class: "word", Len: i.Len}
	switch {
	case i.Mode == ModeT32 && i.Len == 2:
		w.Name, w.Text = "halfword", fmt.Sprintf("%04x", binary.LittleEndian.Uint16(i.Raw[:]))
	case i.Mode == ModeT32 && i.Len == 4:
		w.Name, w.Text = "halfwords", fmt.Sprintf("%04x %04x", binary.LittleEndian.Uint16(i.Raw[:]), binary.LittleEndian.Uint16(i.Raw[2:]))
	case i.Mode == ModeA32 && i.Len == 4:
		w.Text = fmt.Sprintf("%08x (cond %s)", i.Word, Cond(i.Word>>28))
	case i.Len == 4:
		w.Text = fmt.Sprintf("%08x (bits 28:25 = %#x)", i.Word, (i.Word>>25)&0xF)
	}
	return append(f, w)
}
