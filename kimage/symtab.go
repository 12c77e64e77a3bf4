package kimage

import (
	"fmt"
	"hash/maphash"
	"io"
	"iter"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/kboost/kboost/internal/memhint"
)

// Symbol is one entry of a symbol table.
type Symbol struct {
	Name   string
	Module string // kallsyms "[module]" suffix, "" for the kernel itself
	Addr   uint64
	Size   uint64 // from ELF; for map files the distance to the next symbol (0 = unknown)
	region int    // symbols only bound each other's sizes within one region
	Type   byte   // nm/kallsyms letter: 'T' global text, 't' local text, 'D', 'b', 'A', ...
	Func   bool   // a function (text symbol or STT_FUNC)
	filled bool   // Size was inferred from the next symbol, not given
	// (Field order keeps a Symbol at 64 bytes: a kernel has ~100k of them.)
}

// regionAbs marks absolute symbols: they never bound another symbol's size.
const regionAbs = -1

// SymTab is a symbol table sorted by address (aliases at one address ordered
// with the preferred name first) with a name index. The zero value is empty.
type SymTab struct {
	syms     []Symbol
	nameOnce sync.Once
	byName   nameIndex // built on the second ByName (an audit by address never needs it)
	lookups  atomic.Int32
	given    bool // some symbol has a size of its own (ELF)
}

// NewSymTab sorts syms by address, fills missing sizes of function symbols from
// the distance to the next higher address in the same region, and indexes names.
// It takes ownership of syms.
func NewSymTab(syms []Symbol) *SymTab {
	less := func(a, b *Symbol) bool {
		if a.Addr != b.Addr {
			return a.Addr < b.Addr
		}
		return symRank(a) < symRank(b)
	}
	// kallsyms and System.map are nearly sorted already: skip the sort when
	// they are (a stable sort of sorted input would still cost n log n).
	sorted := true
	for i := 1; i < len(syms); i++ {
		if less(&syms[i], &syms[i-1]) {
			sorted = false
			break
		}
	}
	if !sorted {
		sort.SliceStable(syms, func(i, j int) bool { return less(&syms[i], &syms[j]) })
	}
	fillSizes(syms)
	t := &SymTab{syms: syms}
	for i := range syms {
		if syms[i].Size > 0 && !syms[i].filled {
			t.given = true
		}
	}
	return t
}

func (t *SymTab) indexNames() { t.byName.build(t.syms) }

// nameIndex maps a name to the first symbol (in address order) that has it:
// an open-addressing hash table of symbol indexes, at most half full. A
// kernel's ~100k names fit in 1 MiB built in a few milliseconds, where a Go
// map of them takes tens of milliseconds and several times the memory.
type nameIndex struct {
	seed  maphash.Seed
	slots []int32 // 1 + index into the symbols; 0: empty. len is a power of two.
}

func (x *nameIndex) build(syms []Symbol) {
	n := 16
	for n < 2*len(syms) {
		n *= 2
	}
	x.seed = maphash.MakeSeed()
	x.slots = make([]int32, n)
	memhint.Prefault(x.slots)
	mask := uint64(n - 1)
	for i := range syms {
		name := syms[i].Name
		for j := maphash.String(x.seed, name) & mask; ; j = (j + 1) & mask {
			s := x.slots[j]
			if s == 0 {
				x.slots[j] = int32(i + 1)
				break
			}
			if syms[s-1].Name == name {
				break // a later symbol of the same name: the first one stays
			}
		}
	}
}

// find returns the index of the first symbol named name, or -1.
func (x *nameIndex) find(syms []Symbol, name string) int {
	if len(x.slots) == 0 {
		return -1
	}
	mask := uint64(len(x.slots) - 1)
	for j := maphash.String(x.seed, name) & mask; ; j = (j + 1) & mask {
		s := x.slots[j]
		if s == 0 {
			return -1
		}
		if syms[s-1].Name == name {
			return int(s - 1)
		}
	}
}

// symRank orders aliases: sized functions, then global, then the rest.
func symRank(s *Symbol) int {
	r := 0
	if !s.Func {
		r += 4
	}
	if s.Size == 0 {
		r += 2
	}
	if s.Type >= 'a' && s.Type <= 'z' {
		r++
	}
	return r
}

// fillSizes gives every zero-size, non-absolute symbol the distance to the next
// symbol at a higher address in the same region (aliases get the same size). The
// last symbol of a region keeps size 0.
func fillSizes(syms []Symbol) {
	next := map[int]uint64{} // region -> lowest address seen above the current one
	for i := len(syms) - 1; i >= 0; {
		// Process the group of symbols sharing one address together.
		j := i
		for j > 0 && syms[j-1].Addr == syms[i].Addr {
			j--
		}
		for k := j; k <= i; k++ {
			s := &syms[k]
			if s.Size == 0 && s.region != regionAbs {
				if n, ok := next[s.region]; ok && n > s.Addr {
					s.Size, s.filled = n-s.Addr, true
				}
			}
		}
		for k := j; k <= i; k++ {
			if syms[k].region != regionAbs {
				next[syms[k].region] = syms[k].Addr
			}
		}
		i = j - 1
	}
}

// Len returns the number of symbols.
func (t *SymTab) Len() int {
	if t == nil {
		return 0
	}
	return len(t.syms)
}

// All iterates every symbol in address order.
func (t *SymTab) All() iter.Seq[Symbol] {
	return func(yield func(Symbol) bool) {
		if t == nil {
			return
		}
		for _, s := range t.syms {
			if !yield(s) {
				return
			}
		}
	}
}

// Funcs iterates the function symbols in address order, one per address (the
// preferred alias).
func (t *SymTab) Funcs() iter.Seq[Symbol] {
	return func(yield func(Symbol) bool) {
		if t == nil {
			return
		}
		for i, s := range t.syms {
			if !s.Func {
				continue
			}
			if i > 0 && t.syms[i-1].Addr == s.Addr && t.syms[i-1].Func {
				continue // an alias of the function just yielded
			}
			if !yield(s) {
				return
			}
		}
	}
}

// ByName returns the symbol with that name (the first in address order when
// several share it, e.g. local symbols of different files).
func (t *SymTab) ByName(name string) (Symbol, bool) {
	if t == nil {
		return Symbol{}, false
	}
	if t.lookups.Add(1) == 1 {
		// A single look-up (such as SetSymbols' _text) scans instead of
		// indexing ~100k names.
		for i := range t.syms {
			if t.syms[i].Name == name {
				return t.syms[i], true
			}
		}
		return Symbol{}, false
	}
	t.nameOnce.Do(t.indexNames)
	i := t.byName.find(t.syms, name)
	if i < 0 {
		return Symbol{}, false
	}
	return t.syms[i], true
}

// Lookup finds the symbol containing addr and the offset of addr in it. The
// candidates are the preferred symbols at the highest addresses <= addr whose
// size covers addr (or that sit exactly at addr); a symbol with a given size (an
// ELF function) wins over a nearer one whose size was only inferred from the next
// symbol (a label inside it). Map files have only inferred sizes, so there the
// nearest symbol wins, as with kallsyms. O(log n).
func (t *SymTab) Lookup(addr uint64) (sym Symbol, off uint64, ok bool) {
	if t == nil || len(t.syms) == 0 {
		return Symbol{}, 0, false
	}
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].Addr > addr }) - 1
	var best Symbol
	found := false
	for steps := 0; i >= 0 && steps < 64; steps++ {
		// Move to the first (preferred) alias at this address.
		for i > 0 && t.syms[i-1].Addr == t.syms[i].Addr {
			i--
		}
		s := t.syms[i]
		i--
		if s.region == regionAbs && s.Addr != addr {
			continue
		}
		if s.Addr != addr && addr-s.Addr >= s.Size {
			continue
		}
		if !s.filled && s.Size > 0 {
			return s, addr - s.Addr, true
		}
		if !t.given {
			return s, addr - s.Addr, true
		}
		if !found {
			best, found = s, true
		}
	}
	if found {
		return best, addr - best.Addr, true
	}
	return Symbol{}, 0, false
}

// LoadSymbols reads a System.map or /proc/kallsyms-format file.
func LoadSymbols(path string) (*SymTab, error) {
	// A large regular file is mapped (readSymbolFile); otherwise os.ReadFile
	// sizes its buffer from the file (io.ReadAll would grow and copy it a
	// dozen times for a 10 MB kallsyms); /proc files report size 0 and are
	// read until EOF all the same.
	data, err := readSymbolFile(path)
	if err != nil {
		return nil, err
	}
	t, err := parseSymbolMap(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseSymbolMap parses System.map / kallsyms lines "ADDR TYPE NAME[\t[MODULE]]".
// Errors wrap ErrCorrupt (bad line), ErrPlaceholderMap (Debian's stub file) or
// ErrKptrRestrict (every address zero).
func ParseSymbolMap(r io.Reader) (*SymTab, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, &FormatError{What: "symbol map", Off: -1, Why: err.Error(), Err: ErrCorrupt}
	}
	return parseSymbolMap(data)
}

// ParseSymbolLines parses System.map / kallsyms lines as ParseSymbolMap does
// but returns the symbols in the order of the lines, sizes unset: the order
// and the neighbours kallsyms itself has (the guest's verifier sizes
// functions as kallsyms_lookup_size_offset does, from every core symbol).
// Errors wrap ErrCorrupt or ErrPlaceholderMap.
func ParseSymbolLines(b []byte) ([]Symbol, error) {
	data := string(b)
	syms, _, err := parseMapLines(make([]Symbol, 0, strings.Count(data, "\n")+1), data, 1)
	return syms, err
}

// parallelMapSize is the size from which a symbol map is parsed in two halves
// at once (a kernel's kallsyms is ~10 MB and on the audit's serial path).
var parallelMapSize = 1 << 20

// parseSymbolMap parses raw and takes ownership of it: symbol and module
// names are substrings of raw (not one allocation each, which was a fifth of
// the audit's start-up), so the caller must never modify raw afterwards.
func parseSymbolMap(raw []byte) (*SymTab, error) {
	data := unsafe.String(unsafe.SliceData(raw), len(raw))
	type part struct {
		syms    []Symbol
		nonzero bool
		err     error
	}
	// One slice for both halves (each fills its own part of it), so that the
	// ~100k symbols are not copied again into a new slice at the end.
	var (
		second chan part
		rest   string
		first  int
	)
	n1 := strings.Count(data, "\n") + 1
	n2 := 0
	if len(data) >= parallelMapSize {
		if k := strings.IndexByte(data[len(data)/2:], '\n'); k >= 0 {
			cut := len(data)/2 + k + 1
			rest, data = data[cut:], data[:cut]
			first = strings.Count(data, "\n") + 1 // line number of rest's first line
			n1, n2 = first, n1-first+1
		}
	}
	all := make([]Symbol, 0, n1+n2)
	memhint.Prefault(all) // 6 MB for a kernel, about to be filled

	if rest != "" {
		second = make(chan part, 1)
		go func() {
			var p part
			p.syms, p.nonzero, p.err = parseMapLines(all[n1:n1:n1+n2], rest, first)
			second <- p
		}()
	}
	syms, nonzero, err := parseMapLines(all[:0:n1], data, 1)
	if second != nil {
		p := <-second
		if err == nil {
			err = p.err
		}
		// Blank lines leave a gap between the halves: close it in place.
		if len(syms) < n1 {
			copy(all[len(syms):cap(all)], p.syms)
		}
		syms = all[:len(syms)+len(p.syms)]
		nonzero = nonzero || p.nonzero
	}
	if err != nil {
		return nil, err
	}
	if len(syms) > 0 && !nonzero {
		return nil, ErrKptrRestrict
	}
	return NewSymTab(syms), nil
}

// parseMapLines appends the symbols of data's lines to syms (which has room
// for one per line), numbering the lines from first.
func parseMapLines(syms []Symbol, data string, first int) (_ []Symbol, nonzero bool, err error) {
	line := first - 1
	for len(data) > 0 {
		line++
		b := data
		if i := strings.IndexByte(data, '\n'); i >= 0 {
			b, data = data[:i], data[i+1:]
		} else {
			data = ""
		}
		if len(b) > 1<<20 {
			return nil, false, &FormatError{What: fmt.Sprintf("symbol map line %d", line), Off: -1, Why: "line too long", Err: ErrCorrupt}
		}
		b = strings.TrimRight(b, "\r")
		if len(strings.TrimSpace(b)) == 0 {
			continue
		}
		// Debian's placeholder is a one-line file.
		if line <= 3 && strings.Contains(b, "The real System.map is in") {
			return nil, false, ErrPlaceholderMap
		}
		s, err := parseMapLine(b)
		if err != nil {
			return nil, false, &FormatError{What: fmt.Sprintf("symbol map line %d", line), Off: -1, Why: err.Error(), Err: ErrCorrupt}
		}
		if s.Addr != 0 {
			nonzero = true
		}
		syms = append(syms, s)
	}
	return syms, nonzero, nil
}

// fields splits b at runs of spaces and tabs into at most len(f)+1 fields
// without allocating; n > len(f) means too many.
func fields(b string, f *[4]string) (n int) {
	for len(b) > 0 {
		for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
			b = b[1:]
		}
		if len(b) == 0 {
			break
		}
		i := 0
		for i < len(b) && b[i] != ' ' && b[i] != '\t' {
			i++
		}
		if n == len(f) {
			return n + 1
		}
		f[n] = b[:i]
		n++
		b = b[i:]
	}
	return n
}

func parseMapLine(b string) (Symbol, error) {
	var fa [4]string
	n := fields(b, &fa)
	f := fa[:min(n, 4)]
	if n < 3 || n > 4 {
		return Symbol{}, fmt.Errorf("want \"ADDRESS TYPE NAME [[MODULE]]\", got %q", truncate(b))
	}
	addr, err := strconv.ParseUint(f[0], 16, 64)
	if err != nil || len(f[0]) > 16 {
		return Symbol{}, fmt.Errorf("bad address %q", truncate(f[0]))
	}
	// '?' is nm's type for a symbol in no known section (linker-defined
	// boundaries such as __init_end in a tinyconfig kernel's kallsyms).
	if len(f[1]) != 1 || !(isLetter(f[1][0]) || f[1][0] == '?') {
		return Symbol{}, fmt.Errorf("bad symbol type %q", truncate(f[1]))
	}
	s := Symbol{Addr: addr, Type: f[1][0], Name: f[2]}
	if len(f) == 4 {
		m := f[3]
		if len(m) < 3 || m[0] != '[' || m[len(m)-1] != ']' {
			return Symbol{}, fmt.Errorf("bad module field %q", truncate(m))
		}
		s.Module = m[1 : len(m)-1]
	}
	// A weak text symbol's letter ('W'/'w') may also name weak data; treat it as
	// text only with 't'/'T' or 'W'/'w' as kallsyms prints functions.
	s.Func = isTextType(s.Type)
	s.region = moduleRegion(s.Type, s.Module)
	return s, nil
}

// moduleRegion keys map-file size regions: per module, text apart from the rest.
func moduleRegion(typ byte, module string) int {
	if typ == 'A' || typ == 'a' {
		return regionAbs
	}
	h := 0
	if module != "" {
		// FNV-1a folded into a positive int: distinct modules get distinct regions
		// with overwhelming probability, and equal names always match.
		var x uint32 = 2166136261
		for i := 0; i < len(module); i++ {
			x ^= uint32(module[i])
			x *= 16777619
		}
		h = int(x>>1) + 1
	}
	r := h * 2
	if isTextType(typ) {
		r++
	}
	return r
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func truncate(b string) string {
	if len(b) > 80 {
		return b[:80] + "..."
	}
	return b
}

// Point is a probe location: a symbol plus offset, or a plain address.
type Point struct {
	Sym    string // "" for a plain address
	Off    uint64
	Addr   uint64 // valid when Sym == ""
	IsAddr bool
}

func (p Point) String() string {
	if p.IsAddr {
		return fmt.Sprintf("%#x", p.Addr)
	}
	if p.Off == 0 && !(len(p.Sym) >= 8 && len(p.Sym) <= 16 && isHex(p.Sym)) {
		return p.Sym
	}
	// A name ParsePoint would read as an address keeps its "+0".
	return fmt.Sprintf("%s+%#x", p.Sym, p.Off)
}

// ParsePoint parses "NAME", "NAME+OFF" (OFF decimal, 0x hex, 0 octal, as
// kprobe_events reads it) or an address ("0xffffffff81000000", or 8+ bare hex
// digits).
func ParsePoint(s string) (Point, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Point{}, fmt.Errorf("empty probe point: want NAME, NAME+OFF or an address")
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		a, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			return Point{}, fmt.Errorf("bad address %q: want hex after 0x", s)
		}
		return Point{Addr: a, IsAddr: true}, nil
	}
	if len(s) >= 8 && len(s) <= 16 && isHex(s) {
		a, _ := strconv.ParseUint(s, 16, 64)
		return Point{Addr: a, IsAddr: true}, nil
	}
	name, offs, hasOff := strings.Cut(s, "+")
	if name == "" || !validSymName(name) {
		return Point{}, fmt.Errorf("bad symbol name in probe point %q", s)
	}
	p := Point{Sym: name}
	if hasOff {
		o, err := strconv.ParseUint(offs, 0, 64)
		if err != nil {
			return Point{}, fmt.Errorf("bad offset in probe point %q: want decimal or 0x hex", s)
		}
		p.Off = o
	}
	return p, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func validSymName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == '+' || c >= 0x7F {
			return false
		}
	}
	return true
}

// Resolve turns a Point into an address using the table, returning the symbol
// that contains it (ok=false in Lookup terms is not an error for a plain address).
func (t *SymTab) Resolve(p Point) (addr uint64, sym Symbol, off uint64, err error) {
	if p.IsAddr {
		sym, off, ok := t.Lookup(p.Addr)
		if !ok {
			return p.Addr, Symbol{}, 0, nil
		}
		return p.Addr, sym, off, nil
	}
	s, ok := t.ByName(p.Sym)
	if !ok {
		return 0, Symbol{}, 0, fmt.Errorf("%q: %w", p.Sym, ErrNoSymbol)
	}
	return s.Addr + p.Off, s, p.Off, nil
}

// isTextType: kallsyms/nm letters of text symbols (weak ones included).
func isTextType(t byte) bool { return t == 'T' || t == 't' || t == 'W' || t == 'w' }

// Shift returns a copy of the table with every non-absolute address moved by
// delta.
func (t *SymTab) Shift(delta int64) *SymTab {
	if t == nil {
		return nil
	}
	syms := make([]Symbol, len(t.syms))
	copy(syms, t.syms)
	for i := range syms {
		if syms[i].region != regionAbs {
			syms[i].Addr += uint64(delta)
		}
	}
	return NewSymTab(syms)
}
