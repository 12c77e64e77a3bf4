package vm

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/kboost/kboost/vm/guest"
)

// arm64ImageTextOffset is where _stext sits in a Debian arm64 Image: byte 0
// is _text (the EFI/Image header), _stext follows at 64 KiB.
const arm64ImageTextOffset = 0x10000

// FindARM64Tables finds the jump-label table (__jump_table) and the exception
// table (__ex_table) in an arm64 kernel Image, which has no section headers or
// data symbols, by their shape, and returns the code addresses they name.
// Both hold entries of place-relative 32-bit offsets (6.1 arm64):
//
//	jump_entry            16 bytes: s32 code, s32 target, s64 key
//	exception_table_entry 12 bytes: s32 insn, s32 fixup, s16 type, s16 data
//
// An entry qualifies when its offsets land on word-aligned addresses inside
// the kernel text or init text; a jump entry's code word must be NOP or B, an
// exception entry's type one of the four 6.1 types. Each table is the longest
// run of qualifying entries (the jump table's clusters within 64 entries of it
// joined); the exception table must be sorted by address, as sorttable leaves
// it. rep supplies the text ranges (kallsyms) and, to check how the Image
// maps onto the running kernel, the functions' bytes read from kcore: most
// must equal the Image's bytes at the same place, else the tables are not
// used (error).
func FindARM64Tables(img []byte, rep *guest.ARM64Report) (*guest.ARM64Tables, error) {
	if rep.TextStart < arm64ImageTextOffset || rep.TextEnd <= rep.TextStart {
		return nil, fmt.Errorf("vm: no kernel text range in the record")
	}
	base := rep.TextStart - arm64ImageTextOffset
	// Boot-time patching (ftrace entry, alternatives, jump labels) changes a
	// few words; nearly all must be the Image's.
	same, checked := 0, 0
	for _, f := range rep.Funcs {
		code, err := hex.DecodeString(f.Bytes)
		if err != nil || f.Addr < base || f.Init {
			continue
		}
		off := f.Addr - base
		if off+uint64(len(code)) > uint64(len(img)) {
			continue
		}
		for i := 0; i+4 <= len(code); i += 4 {
			checked++
			if bytes.Equal(img[off+uint64(i):off+uint64(i)+4], code[i:i+4]) {
				same++
			}
		}
	}
	if checked == 0 || same < checked*9/10 {
		return nil, fmt.Errorf("vm: the Image does not map onto the running kernel at _stext-%#x (%d of %d words equal)", arm64ImageTextOffset, same, checked)
	}
	type span struct{ lo, hi uint64 } // Image offsets
	text := []span{{rep.TextStart - base, rep.TextEnd - base}}
	if rep.InitEnd > rep.InitStart && rep.InitStart >= base {
		text = append(text, span{rep.InitStart - base, rep.InitEnd - base})
	}
	inText := func(a int64) bool {
		if a < 0 || a%4 != 0 {
			return false
		}
		for _, s := range text {
			if uint64(a) >= s.lo && uint64(a) < s.hi && uint64(a)+4 <= uint64(len(img)) {
				return true
			}
		}
		return false
	}
	le := binary.LittleEndian
	rel := func(p int) (int64, int64) {
		return int64(p) + int64(int32(le.Uint32(img[p:]))), int64(p) + 4 + int64(int32(le.Uint32(img[p+4:])))
	}
	jumpOK := func(p int) bool {
		c, t := rel(p)
		if !inText(c) || !inText(t) {
			return false
		}
		w := le.Uint32(img[c:])
		return w == 0xD503201F || w&0xFC000000 == 0x14000000
	}
	exOK := func(p int) bool {
		c, t := rel(p)
		typ := int16(le.Uint16(img[p+8:]))
		return inText(c) && inText(t) && typ >= 1 && typ <= 4
	}
	tables := &guest.ARM64Tables{}
	jr := longestRuns(len(img), 16, 8, jumpOK)
	if len(jr) > 0 {
		best := jr[0]
		for _, r := range jr {
			if r.n > best.n {
				best = r
			}
		}
		lo, hi := best.start, best.start+16*best.n
		// Join runs on the same stride close to the best one (an entry whose
		// code is outside the text, such as exit text, breaks a run).
		for changed := true; changed; {
			changed = false
			for _, r := range jr {
				end := r.start + 16*r.n
				if (r.start-lo)%16 == 0 && r.start < lo && end >= lo-64*16 {
					lo, changed = r.start, true
				}
				if (r.start-lo)%16 == 0 && r.start >= hi && r.start <= hi+64*16 {
					hi, changed = end, true
				}
			}
		}
		for p := lo; p < hi; p += 16 {
			if jumpOK(p) {
				c, _ := rel(p)
				tables.JumpLabels = append(tables.JumpLabels, base+uint64(c))
			}
		}
	}
	er := longestRuns(len(img), 12, 4, exOK)
	if len(er) > 0 {
		best := er[0]
		for _, r := range er {
			if r.n > best.n {
				best = r
			}
		}
		for k := 0; k < best.n; k++ {
			c, _ := rel(best.start + 12*k)
			tables.ExTable = append(tables.ExTable, base+uint64(c))
		}
		if !sort.SliceIsSorted(tables.ExTable, func(i, j int) bool { return tables.ExTable[i] < tables.ExTable[j] }) {
			return nil, fmt.Errorf("vm: the exception-table candidate at Image offset %#x (%d entries) is not sorted", best.start, best.n)
		}
	}
	const minEntries = 64
	if len(tables.JumpLabels) < minEntries || len(tables.ExTable) < minEntries {
		return nil, fmt.Errorf("vm: no jump-label or exception table found in the Image (%d and %d entries)", len(tables.JumpLabels), len(tables.ExTable))
	}
	sort.Slice(tables.JumpLabels, func(i, j int) bool { return tables.JumpLabels[i] < tables.JumpLabels[j] })
	return tables, nil
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
