package cli

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/render"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/loader"
)

// The optimized probe (optprobe) of an optimizable site, drawn from the
// audit's OptLen and the function's bytes: the jmp written over the site, the
// detour buffer (the kernel's template, the copied instructions, the jump
// back) and the hit step by step.

// optJump encodes the jump an optprobe writes, per architecture whose
// optprobes kboost draws (x86-64: jmp rel32, arch_optimize_kprobes; the
// template's mov $op,%rdi is x86-64's, so i386 is not drawn).
var optJump = map[string]func(from, to uint64) []byte{"x86-64": jmpRel32}

func jmpRel32(from, to uint64) []byte {
	b := []byte{0xE9, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], uint32(to-(from+5)))
	return b
}

// optTemplate reads the kernel's optprobe template from f when its symbols
// are there (a vmlinux with System.map or kallsyms); nil otherwise.
func optTemplate(f *kimage.File) *loader.OptTemplate {
	addr := map[string]uint64{}
	for _, n := range []string{"optprobe_template_entry", "optprobe_template_clac", "optprobe_template_val", "optprobe_template_call", "optprobe_template_end", "optimized_callback"} {
		s, ok := f.Symbols.ByName(n)
		if !ok {
			return nil
		}
		addr[n] = s.Addr
	}
	e := addr["optprobe_template_entry"]
	n := int(addr["optprobe_template_end"] - e)
	t := &loader.OptTemplate{Entry: e, Clac: int(addr["optprobe_template_clac"] - e), Val: int(addr["optprobe_template_val"] - e),
		Call: int(addr["optprobe_template_call"] - e), Callback: addr["optimized_callback"]}
	if n <= 0 || n > 512 {
		return nil
	}
	b, err := f.ReadAt(e, n)
	if err != nil {
		return nil
	}
	t.Bytes = b
	if t.Check() != nil {
		return nil
	}
	return t
}

// detourPicture draws the optprobe at addr, whose OptLen original bytes are
// orig, with its buffer at buf (modelled: the kernel takes it from a
// kprobe_optinsn_page in the module area). nil when kboost does not draw this
// architecture's optprobes.
func detourPicture(arch *decode.Arch, pol *boost.Policy, env *boost.Env, t *loader.OptTemplate, addr uint64, orig []byte, buf uint64) *render.Detour {
	jump := optJump[arch.Name]
	if jump == nil || len(orig) < 5 {
		return nil
	}
	d := &render.Detour{Addr: hexAddr(addr), Buffer: hexAddr(buf), Resume: hexAddr(addr + uint64(len(orig))), OptLen: len(orig)}
	for _, b := range jump(addr, buf) {
		d.Patched = append(d.Patched, fmt.Sprintf("%02x", b))
	}
	for _, b := range orig {
		d.Orig = append(d.Orig, fmt.Sprintf("%02x", b))
	}
	var img []byte
	var known []bool
	tlen := 0
	if t != nil {
		p := &loader.Predictor{Policy: pol, Env: env}
		var err error
		if img, known, err = p.DetourImage(t, addr, orig, buf); err != nil {
			img, t = nil, nil
		} else {
			tlen = len(t.Bytes)
		}
	}
	if img == nil {
		// no template in the file: the copies and the jump back alone, at
		// their offsets after a template of unknown length
		e := *env
		e.Sites = nil
		for k := 0; k < len(orig); {
			e.SlotAddr = buf + uint64(k)
			c := pol.ClassifyBytesEnv(orig[k:], arch.Mode, addr+uint64(k), &e)
			if c.Len == 0 || k+c.Len > len(orig) || c.SlotLen < c.Len {
				return nil
			}
			img = append(img, c.Slot[:c.Len]...)
			k += c.Len
		}
		img = append(img, jump(buf+uint64(len(img)), addr+uint64(len(orig)))...)
		d.TemplateNote = "This file does not hold the kernel's optprobe template (no optprobe_template_entry symbol): its bytes come first in the buffer; the copies and the jump back are shown by their offset after it, encoded as if they started at the buffer's address."
	} else {
		d.TemplateLen = tlen
		d.TemplateNote = fmt.Sprintf("The template is the kernel's own, %d bytes from optprobe_template_entry (%#x) in this file; the mov $op,%%rdi immediate (the struct optimized_kprobe) is the kernel's heap address, shown as ..; the NOP3 at +%d becomes clac on SMAP CPUs.", tlen, t.Entry, t.Clac)
	}
	// the buffer's instructions: the template's, then the copies and the jmp
	// (without the template, drawn from the buffer's start)
	base := buf
	for off := 0; off < len(img); {
		var in decode.Inst
		err := decode.DecodeInto(&in, img[off:], arch.Mode, base+uint64(off))
		n := max(in.Len, 1)
		if err != nil {
			n = 1
		}
		n = min(n, len(img)-off)
		line := render.SlotLine{Off: off, Bytes: maskedHex(img[off:off+n], known, off), Asm: "(bad)"}
		if err == nil {
			line.Asm = decode.Format(&in, nil)
		}
		kind := "copy"
		switch {
		case off < tlen:
			kind = "tmpl"
			switch {
			case t != nil && off == t.Call:
				line.Note = fmt.Sprintf("call optimized_callback (%#x): the kprobe's pre_handler", t.Callback)
				kind = "call"
			case t != nil && off == t.Val:
				line.Note = "mov $op,%rdi: the struct optimized_kprobe"
				line.Asm = "mov $op,%rdi"
			case t != nil && off == t.Clac:
				line.Note = "NOP3, clac with SMAP"
			}
		case off+n == len(img):
			kind = "jmp"
			line.Note = "jmp back to addr+OptLen = " + d.Resume
		default:
			line.Note = fmt.Sprintf("copy of the instruction at %s+%d", d.Addr, off-tlen)
			if err == nil && in.RIPRel {
				line.Note += ", RIP-relative displacement rebased"
			}
		}
		d.Lines = append(d.Lines, line)
		for i := off; i < off+n; i++ {
			if i >= tlen {
				k := kind
				if k == "copy" && err == nil && in.RIPRel && i-off >= in.DispOff && i-off < in.DispOff+in.DispLen {
					k = "fixup"
				}
				d.Copy = append(d.Copy, render.SlotByte{Off: i, Hex: fmt.Sprintf("%02x", img[i]), Kind: k})
			}
		}
		off += n
	}
	d.Steps = detourSteps(d, t)
	return d
}

// maskedHex is b in spaced hex, ".." where known (from off) says the byte is
// the kernel's own.
func maskedHex(b []byte, known []bool, off int) string {
	var parts []string
	for i, c := range b {
		if j := off + i; j < len(known) && !known[j] {
			parts = append(parts, "..")
			continue
		}
		parts = append(parts, fmt.Sprintf("%02x", c))
	}
	return strings.Join(parts, " ")
}

// detourSteps is the hit of an optimized probe, numbered by the template
// (arch/x86/kernel/kprobes/opt.c: the optimizer, the template, the callback).
func detourSteps(d *render.Detour, t *loader.OptTemplate) []string {
	tmpl := "the template"
	if t != nil {
		tmpl = fmt.Sprintf("the template (%d bytes)", len(t.Bytes))
	}
	var copies []string
	for _, l := range d.Lines {
		if strings.HasPrefix(l.Note, "copy of") {
			copies = append(copies, l.Asm)
		}
	}
	return []string{
		fmt.Sprintf("register_kprobe writes int3 at %s; the site is optimizable (the %d bytes up to %s are whole instructions that run out of line, and nothing jumps into them), so the kprobe optimizer later writes jmp %s (%s) over the first 5 bytes: the other %d byte(s) are not executed any more", d.Addr, d.OptLen, d.Resume, d.Buffer, strings.Join(d.Patched, " "), d.OptLen-5),
		fmt.Sprintf("the CPU reaches %s and jumps to the detour buffer at %s: no trap", d.Addr, d.Buffer),
		tmpl + " saves the registers as a struct pt_regs on the stack (flags included)",
		"mov $op,%rdi; call optimized_callback: the kprobe's pre_handler runs with those registers, as at an int3 hit",
		"the template restores the registers and the flags",
		fmt.Sprintf("the copied instructions run in the buffer: %s", strings.Join(copies, "; ")),
		fmt.Sprintf("jmp back to addr+OptLen = %s; execution continues", d.Resume),
	}
}
