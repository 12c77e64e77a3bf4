package render

import "fmt"

// drawing is a picture made of boxes, texts and arrows, laid out in Go so that
// the template only emits primitives.
type drawing struct {
	W, H   int
	Title  string
	Boxes  []box
	Texts  []label
	Arrows []arrow
}

type box struct {
	X, Y, W, H  int
	Fill        string
	Stroke      string
	StrokeW     float64
	Dash        bool
	Text        string
	Ink         string
	Title       string
	Class, Data string
}

type label struct {
	X, Y   int
	Text   string
	Anchor string // start, middle, end
	Size   int
	Bold   bool
}

type arrow struct {
	D     string // path
	Dash  bool
	Title string
	Class string
}

// fieldFill colours an instruction's fields (not verdicts: a second palette,
// light so that the byte text stays readable; the name is written under it).
var fieldFill = map[string]string{
	"prefix": "#E0E0E0", "rex": "#D4C4F0", "vex": "#D4C4F0", "opcode": "#9FD8F5", "modrm": "#BFE8C8",
	"sib": "#C8E8A0", "disp": "#FFE08A", "imm": "#F5C0A8", "word": "#9FD8F5",
}

const byteW, byteH = 34, 26

// instDrawing draws the instruction's bytes with its fields under them.
func instDrawing(in *Inst) *drawing {
	d := &drawing{Title: "fields of " + in.Asm}
	x0, y := 8, 24
	d.Texts = append(d.Texts, label{X: x0, Y: 14, Text: in.Addr + ": " + in.Asm, Size: 12})
	n := 0
	for i, f := range in.Fields {
		fx := x0 + f.Off*byteW
		for j, b := range f.Bytes {
			d.Boxes = append(d.Boxes, box{X: fx + j*byteW, Y: y, W: byteW, H: byteH, Fill: fieldFill[f.Class], Stroke: "#555", StrokeW: 0.7,
				Text: b, Ink: "#000", Title: f.Name + ": " + f.Text, Class: "byte " + f.Class, Data: f.Name})
		}
		w := len(f.Bytes) * byteW
		ly := y + byteH + 14 + 13*(i%2)
		d.Boxes = append(d.Boxes, box{X: fx + 1, Y: y + byteH + 2, W: w - 2, H: 3, Fill: "#333"})
		d.Texts = append(d.Texts, label{X: fx + w/2, Y: ly, Text: f.Name, Anchor: "middle", Size: 11})
		n = max(n, f.Off+len(f.Bytes))
	}
	d.W = max(x0+n*byteW+8, x0+7*len(d.Texts[0].Text)+8, 260)
	d.H = y + byteH + 40
	return d
}

var slotFill = map[string]string{"call": "#D4C4F0", "tmpl": "#D4C4F0", "copy": "#E8E8E8", "fixup": "#FFE08A", "jmp": "#009E73", "int3": "#E69F00", "ret": "#E69F00", "tail": "#FFFFFF", "code": "#E8E8E8"}

// slotDrawing draws the probed code (with the breakpoint over its first byte)
// above the slot, and the way back as an arrow from the slot's jump (or trap)
// to addr+len.
func slotDrawing(s *Slot) *drawing {
	d := &drawing{Title: "slot"}
	x0 := 180
	yc, ys := 40, 130
	d.Texts = append(d.Texts,
		label{X: 4, Y: yc + 17, Text: "code " + s.Addr0, Size: 11},
		label{X: 4, Y: ys + 17, Text: "slot  " + s.Addr, Size: 11})
	// the probed instruction, then addr+len
	n := max(s.InsnLen, 1)
	for i := 0; i < n; i++ {
		h := "??"
		if i < len(s.Code) {
			h = s.Code[i]
		}
		d.Boxes = append(d.Boxes, box{X: x0 + i*byteW, Y: yc, W: byteW, H: byteH, Fill: slotFill["code"], Stroke: "#555", StrokeW: 0.7, Text: h, Ink: "#000", Class: "code"})
	}
	d.Boxes = append(d.Boxes, box{X: x0 - 2, Y: yc - 3, W: byteW + 4, H: byteH + 6, Fill: "none", Stroke: "#D55E00", StrokeW: 2.5, Title: "the breakpoint is written over the first byte", Class: "bp"})
	d.Texts = append(d.Texts, label{X: x0 + byteW/2, Y: yc - 8, Text: "breakpoint", Anchor: "middle", Size: 11})
	rx := x0 + n*byteW + 20
	d.Boxes = append(d.Boxes, box{X: rx, Y: yc, W: 220, H: byteH, Fill: "#FFFFFF", Stroke: "#333", StrokeW: 1, Dash: true, Text: "addr+len " + s.Resume, Ink: "#000", Class: "resume"})
	for i, b := range s.Bytes {
		k := b.Kind
		ink := "#000"
		sw := 0.7
		if k == "fixup" {
			sw = 2
		}
		t := k
		switch k {
		case "fixup":
			t = "rebased displacement: " + s.FixupNote
		case "jmp":
			t = "jump back to " + s.Resume
		case "int3":
			t = "second trap"
		case "ret":
			t = "return to the kernel's handler"
		}
		d.Boxes = append(d.Boxes, box{X: x0 + i*byteW, Y: ys, W: byteW, H: byteH, Fill: slotFill[k], Stroke: "#333", StrokeW: sw, Text: b.Hex, Ink: ink, Title: fmt.Sprintf("slot+%d: %s", b.Off, t), Class: "sbyte " + k, Data: k})
	}
	// brace labels under the slot
	type run struct {
		kind     string
		from, to int
	}
	var runs []run
	for i, b := range s.Bytes {
		k := b.Kind
		if k == "fixup" {
			k = "copy"
		}
		if len(runs) == 0 || runs[len(runs)-1].kind != k {
			runs = append(runs, run{kind: k, from: i})
		}
		runs[len(runs)-1].to = i + 1
	}
	names := map[string]string{"copy": "copied instruction", "jmp": "jmp back", "int3": "trap", "ret": "return to handler", "tail": "literal"}
	for i, r := range runs {
		w := (r.to - r.from) * byteW
		x := x0 + r.from*byteW
		d.Boxes = append(d.Boxes, box{X: x + 1, Y: ys + byteH + 2, W: w - 2, H: 3, Fill: "#333"})
		d.Texts = append(d.Texts, label{X: x + w/2, Y: ys + byteH + 17 + 13*(i%2), Text: names[r.kind], Anchor: "middle", Size: 11})
	}
	if s.FixupFirst >= 0 && s.FixupLen > 0 {
		x := x0 + s.FixupFirst*byteW
		d.Texts = append(d.Texts, label{X: x + s.FixupLen*byteW/2, Y: ys - 6, Text: "displacement rebased", Anchor: "middle", Size: 11, Bold: true})
	}
	// from the breakpoint to the slot
	d.Arrows = append(d.Arrows, arrow{D: fmt.Sprintf("M%d %d C %d %d, %d %d, %d %d", x0+byteW/2, yc+byteH, x0-30, yc+byteH+30, x0-30, ys-30, x0+4, ys-2), Title: "the trap handler sends the CPU to the slot", Class: "toslot"})
	tx := rx + 110
	switch {
	case s.JumpOff >= 0:
		jx := x0 + s.JumpOff*byteW + byteW
		d.Arrows = append(d.Arrows, arrow{D: fmt.Sprintf("M%d %d C %d %d, %d %d, %d %d", jx, ys, jx+10, ys-40, tx, yc+byteH+40, tx, yc+byteH+3), Title: "jump back to addr+len " + s.Resume, Class: "jumpback"})
		d.Texts = append(d.Texts, label{X: tx + 8, Y: (ys+yc+byteH)/2 + 4, Text: "jmp to addr+len", Size: 11, Bold: true})
	case s.TrapOff >= 0:
		jx := x0 + s.TrapOff*byteW + byteW/2
		d.Arrows = append(d.Arrows, arrow{D: fmt.Sprintf("M%d %d C %d %d, %d %d, %d %d", jx, ys, jx+10, ys-40, tx, yc+byteH+40, tx, yc+byteH+3), Dash: true, Title: "trap; the handler sets the IP to addr+len " + s.Resume, Class: "trapback"})
		text := "trap; IP := addr+len"
		if s.TrapRet {
			text = "handler: PC := addr+len"
		}
		d.Texts = append(d.Texts, label{X: tx + 8, Y: (ys+yc+byteH)/2 + 4, Text: text, Size: 11, Bold: true})
	}
	d.W = max(x0+len(s.Bytes)*byteW, rx+220, tx+8+7*24) + 10
	d.H = ys + byteH + 40
	return d
}

// detourDrawing draws the site with the jmp written over its first 5 bytes
// above the detour buffer (the template as one box, then the copied bytes and
// the jump back), with the way in and the way back as arrows.
func detourDrawing(d *Detour) *drawing {
	g := &drawing{Title: "optprobe detour buffer"}
	x0 := 180
	yc, ys := 40, 130
	g.Texts = append(g.Texts,
		label{X: 4, Y: yc + 17, Text: "code " + d.Addr, Size: 11},
		label{X: 4, Y: ys + 17, Text: "buffer " + d.Buffer, Size: 11})
	for i, h := range d.Orig {
		b := box{X: x0 + i*byteW, Y: yc, W: byteW, H: byteH, Fill: slotFill["code"], Stroke: "#555", StrokeW: 0.7, Text: h, Ink: "#000", Class: "code", Title: "original byte, no longer executed"}
		if i < len(d.Patched) {
			b.Fill, b.Text, b.Class, b.Title = slotFill["jmp"], d.Patched[i], "patched", "jmp to the detour buffer (was "+h+")"
		} else {
			b.Dash = true
		}
		g.Boxes = append(g.Boxes, b)
	}
	g.Boxes = append(g.Boxes, box{X: x0 + 1, Y: yc + byteH + 2, W: len(d.Patched)*byteW - 2, H: 3, Fill: "#333"})
	g.Texts = append(g.Texts, label{X: x0 + len(d.Patched)*byteW/2, Y: yc - 8, Text: "jmp to the buffer", Anchor: "middle", Size: 11})
	rx := x0 + len(d.Orig)*byteW + 20
	g.Boxes = append(g.Boxes, box{X: rx, Y: yc, W: 240, H: byteH, Fill: "#FFFFFF", Stroke: "#333", StrokeW: 1, Dash: true, Text: "addr+OptLen " + d.Resume, Ink: "#000", Class: "resume"})
	tw := 5 * byteW
	tt := "template"
	if d.TemplateLen > 0 {
		tt = fmt.Sprintf("template, %d bytes", d.TemplateLen)
	}
	g.Boxes = append(g.Boxes, box{X: x0, Y: ys, W: tw, H: byteH, Fill: "#D4C4F0", Stroke: "#333", StrokeW: 1, Text: tt, Ink: "#000", Class: "template",
		Title: "save the registers (pt_regs), mov $op,%rdi, call optimized_callback (the pre_handler), restore the registers"})
	g.Texts = append(g.Texts, label{X: x0 + tw/2, Y: ys + byteH + 17, Text: "save regs, call handler, restore", Anchor: "middle", Size: 11})
	xb := x0 + tw
	jx := -1
	for i, b := range d.Copy {
		t := "copied instruction byte"
		switch b.Kind {
		case "fixup":
			t = "rebased displacement"
		case "jmp":
			t = "jump back to " + d.Resume
			if jx < 0 {
				jx = xb + i*byteW
			}
		}
		sw := 0.7
		if b.Kind == "fixup" {
			sw = 2
		}
		g.Boxes = append(g.Boxes, box{X: xb + i*byteW, Y: ys, W: byteW, H: byteH, Fill: slotFill[b.Kind], Stroke: "#333", StrokeW: sw, Text: b.Hex, Ink: "#000", Title: t, Class: "dbyte " + b.Kind, Data: b.Kind})
	}
	nc := len(d.Copy) - 5
	if nc > 0 {
		g.Boxes = append(g.Boxes, box{X: xb + 1, Y: ys + byteH + 2, W: nc*byteW - 2, H: 3, Fill: "#333"})
		g.Texts = append(g.Texts, label{X: xb + nc*byteW/2, Y: ys + byteH + 30, Text: "copied instructions", Anchor: "middle", Size: 11})
	}
	g.Arrows = append(g.Arrows, arrow{D: fmt.Sprintf("M%d %d C %d %d, %d %d, %d %d", x0+byteW/2, yc+byteH, x0-30, yc+byteH+30, x0-30, ys-30, x0+4, ys-2), Title: "jmp to the detour buffer " + d.Buffer, Class: "todetour"})
	tx := rx + 120
	if jx >= 0 {
		g.Arrows = append(g.Arrows, arrow{D: fmt.Sprintf("M%d %d C %d %d, %d %d, %d %d", jx+byteW, ys, jx+byteW+10, ys-40, tx, yc+byteH+40, tx, yc+byteH+3), Title: "jump back to addr+OptLen " + d.Resume, Class: "jumpback"})
		g.Texts = append(g.Texts, label{X: tx + 8, Y: (ys+yc+byteH)/2 + 4, Text: "jmp to addr+OptLen", Size: 11, Bold: true})
	}
	g.W = max(xb+len(d.Copy)*byteW, rx+240, tx+8+7*20) + 10
	g.H = ys + byteH + 40
	return g
}
