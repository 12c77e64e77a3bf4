package kimage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/kboost/kboost/decode"
)

// A 32-bit ARM kernel Image (the decompressed payload of a zImage) is raw
// code and data loaded at _text, with no header: where it is loaded and
// where its tables are follow from its code once a kallsyms table names
// __gnu_mcount_nc (see ARMImageBase) and the text markers.

// armImage is the state of an ARM Image File.
type armImage struct {
	data []byte
	base uint64 // load address of data[0] (_text); 0 until known
}

// IsARMImage reports whether b looks like a decompressed 32-bit ARM kernel
// Image: its first word is an unconditional A32 instruction and it holds
// the kernel's banner and the ARM processor line setup_processor prints.
func IsARMImage(b []byte) bool {
	return len(b) >= 4096 && b[3]&0xF0 == 0xE0 &&
		bytes.Contains(b, []byte("Linux version ")) && bytes.Contains(b, []byte("(ARMv%s), cr=%08lx"))
}

// openARMImage opens a decompressed ARM Image; its sections appear when
// SetSymbols attaches a kallsyms table.
func openARMImage(b []byte) *File {
	im := &armImage{data: b}
	f := &File{Kind: KindARMImage, Arch: decode.ARM, Machine: "EM_ARM", Symbols: &SymTab{}, image: b, a32: im}
	f.Sections = imageSections(b, 0, 0, nil)
	if v := bannerRelease(b); v != "" {
		f.KernelVersion = v
	}
	return f
}

// bannerRelease is the release of the first "Linux version " banner in b.
func bannerRelease(b []byte) string {
	const banner = "Linux version "
	i := bytes.Index(b, []byte(banner))
	if i < 0 {
		return ""
	}
	rest := b[i+len(banner):]
	if j := bytes.IndexAny(rest, " \x00\n"); j > 0 && j < 128 && !bytes.ContainsAny(rest[:j], "%") {
		return string(rest[:j])
	}
	return ""
}

// setSymbolsARM attaches t to an ARM Image File: the load address comes
// from _text when the table has it, else from the mcount calls
// (ARMImageBase); the text sections are synthesized from its markers. A
// Thumb-2 kernel (CONFIG_THUMB2_KERNEL) is decoded as Thumb.
func (f *File) setSymbolsARM(t *SymTab) int64 {
	im := f.a32
	if s, ok := t.ByName("_text"); ok {
		im.base = s.Addr
	} else if m, ok := t.ByName("__gnu_mcount_nc"); ok {
		if b, err := ARMImageBase(im.data, m.Addr); err == nil {
			im.base = b
		}
	}
	if f.Config != nil && f.Config.Bool("CONFIG_THUMB2_KERNEL") {
		f.Arch = decode.Thumb
	}
	f.Symbols = t
	if im.base != 0 {
		f.Sections = imageSections(im.data, im.base, 0, t)
	}
	return 0
}

// ARMImageBase returns where a 32-bit ARM Image is loaded (_text; Debian
// armmp: 0xc0208000), given the address of __gnu_mcount_nc: every traced
// function calls it, so it is by far the most frequent BL target; BL is
// PC-relative, so its target at an assumed base is off by exactly the
// difference. The error wraps ErrFormat when no target dominates.
func ARMImageBase(img []byte, mcount uint64) (uint64, error) {
	const assumed = 0xC0000000
	hist := map[uint64]int{}
	for off := 0; off+4 <= len(img); off += 4 {
		if t, ok := ARMBLTarget(binary.LittleEndian.Uint32(img[off:]), assumed+uint64(off)); ok {
			hist[t]++
		}
	}
	best, n, second := uint64(0), 0, 0
	for t, c := range hist {
		if c > n {
			best, n, second = t, c, n
		} else if c > second {
			second = c
		}
	}
	if n < 16 || n < 2*second {
		return 0, &FormatError{What: "ARM Image", Off: -1, Err: ErrFormat,
			Why: fmt.Sprintf("no dominant BL target (the mcount calls; %d, next %d)", n, second)}
	}
	return assumed + mcount - best, nil
}

// ARMBLTarget returns the target of an A32 BL (condition AL) word at addr.
func ARMBLTarget(w uint32, addr uint64) (uint64, bool) {
	if w&0xFF000000 != 0xEB000000 {
		return 0, false
	}
	return uint64(int64(addr) + 8 + int64(int32(w<<8)>>6)), true
}

// ARMMcountCalls returns the addresses of the bl mcount words of A32 code
// at addr: the ftrace locations of an ARM kernel (no KPROBES_ON_FTRACE:
// kprobes refuses them).
func ARMMcountCalls(code []byte, addr, mcount uint64) []uint64 {
	var out []uint64
	for off := 0; off+4 <= len(code); off += 4 {
		if t, ok := ARMBLTarget(binary.LittleEndian.Uint32(code[off:]), addr+uint64(off)); ok && t == mcount {
			out = append(out, addr+uint64(off))
		}
	}
	return out
}

// FindARMJumpLabels finds the jump-label table (__jump_table) of a 32-bit
// ARM Image loaded at textBase by its shape: 12-byte entries of absolute
// addresses (u32 code, u32 target, u32 key; ARM has no relative jump
// labels), code and target word-aligned in one of the text ranges, the
// code word a NOP (e320f000) or B. The table is the longest run of such
// entries (at least 64) joined with the runs on the same stride within 64
// entries of it (an entry whose code is elsewhere, such as exit text,
// breaks a run). It returns the code addresses, sorted.
func FindARMJumpLabels(img []byte, textBase uint64, text [][2]uint64) ([]uint64, error) {
	le := binary.LittleEndian
	inText := func(a uint64) bool {
		if a%4 != 0 || a < textBase || a-textBase+4 > uint64(len(img)) {
			return false
		}
		for _, r := range text {
			if a >= r[0] && a < r[1] {
				return true
			}
		}
		return false
	}
	ok := func(p int) bool {
		c, t := uint64(le.Uint32(img[p:])), uint64(le.Uint32(img[p+4:]))
		if !inText(c) || !inText(t) || le.Uint32(img[p+8:]) < uint32(textBase) {
			return false
		}
		w := le.Uint32(img[c-textBase:])
		return w == 0xE320F000 || w&0xFF000000 == 0xEA000000
	}
	runs := longestRuns(len(img), 12, 4, ok)
	if len(runs) == 0 {
		return nil, fmt.Errorf("no jump-label table found in the ARM Image: %w", ErrNoSymbol)
	}
	best := runs[0]
	for _, r := range runs {
		if r.n > best.n {
			best = r
		}
	}
	if best.n < 64 {
		return nil, fmt.Errorf("no jump-label table found in the ARM Image (longest run %d entries): %w", best.n, ErrNoSymbol)
	}
	lo, hi := best.start, best.start+12*best.n
	for changed := true; changed; {
		changed = false
		for _, r := range runs {
			end := r.start + 12*r.n
			if (lo-r.start)%12 == 0 && r.start < lo && end >= lo-64*12 {
				lo, changed = r.start, true
			}
			if (r.start-lo)%12 == 0 && r.start >= hi && r.start <= hi+64*12 {
				hi, changed = end, true
			}
		}
	}
	var out []uint64
	for p := lo; p < hi; p += 12 {
		if ok(p) {
			out = append(out, uint64(le.Uint32(img[p:])))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

type tableRun struct{ start, n int }

// longestRuns returns the runs of at least 16 consecutive entries of size
// stride (starting on multiples of align) for which ok holds.
func longestRuns(size, stride, align int, ok func(p int) bool) []tableRun {
	var out []tableRun
	for p := 0; p+stride+8 <= size; {
		if !ok(p) {
			p += align
			continue
		}
		q := p
		for q+stride+8 <= size && ok(q) {
			q += stride
		}
		if n := (q - p) / stride; n >= 16 {
			out = append(out, tableRun{p, n})
			p = q
		} else {
			p += align
		}
	}
	return out
}
