package monitor

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/sysent"
	"github.com/kboost/kboost/tracer"
)

// Frame is one return address of a backtrace.
type Frame struct {
	Addr string `json:"addr"`
	Sym  string `json:"sym,omitempty"`
	Off  uint64 `json:"off,omitempty"`
	File string `json:"file,omitempty"`
}

func (f Frame) text() string {
	s := f.Addr
	if f.Sym != "" {
		s += fmt.Sprintf(" %s+0x%x", f.Sym, f.Off)
	}
	if f.File != "" {
		s += " (" + f.File + ")"
	}
	return s
}

// fileKey identifies a mapped file's contents: symbol tables are parsed
// once per key.
type fileKey struct {
	dev, ino uint64
	mtime    int64
}

type fileSyms struct {
	syms  *kimage.SymTab
	loads []elf.ProgHeader
}

type mapping struct {
	start, end, off uint64
	path            string
	file            *fileSyms
}

// space is one process's address-space view, re-read from /proc/PID/maps
// only after a call that changes mappings.
type space struct {
	maps  []mapping // sorted by start
	dirty bool
}

type backtracer struct {
	files  map[fileKey]*fileSyms
	spaces map[int]*space
	max    int
	noSyms bool
	stack  [4096]byte
}

func newBacktracer(max int) *backtracer {
	if max <= 0 {
		max = 32
	}
	return &backtracer{files: map[fileKey]*fileSyms{}, spaces: map[int]*space{}, max: max}
}

// viewCalls may create executable mappings, the only ones a backtrace
// looks up: the view is re-read after them (an mmap or mprotect only with
// PROT_EXEC: protCalls' others do not stop for the view). Calls that only
// remove or move mappings (munmap, mremap, brk) leave addresses no stack
// holds, and a call's IP outside the view re-reads it.
var viewCalls = map[string]bool{"mmap": true, "mmap2": true, "mprotect": true, "pkey_mprotect": true,
	"execve": true, "execveat": true, "shmat": true, "remap_file_pages": true}

// protCalls take their protection in argument 2.
var protCalls = []string{"mmap", "mmap2", "mprotect", "pkey_mprotect"}

const protExec = 0x4 // PROT_EXEC

func (b *backtracer) after(name string, c *tracer.Call) {
	if !viewCalls[name] || c.IsError {
		return
	}
	for _, n := range protCalls {
		if n == name && c.Args[2]&protExec == 0 {
			return
		}
	}
	b.invalidate(c.Pid)
}

func (b *backtracer) invalidate(pid int) {
	if s := b.spaces[pid]; s != nil {
		s.dirty = true
	}
}

func (b *backtracer) space(pid int) *space {
	s := b.spaces[pid]
	if s == nil {
		s = &space{dirty: true}
		b.spaces[pid] = s
	}
	if s.dirty {
		s.maps = b.readMaps(pid)
		s.dirty = false
	}
	return s
}

func (b *backtracer) readMaps(pid int) []mapping {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 6 || !strings.HasPrefix(fl[5], "/") || !strings.Contains(fl[1], "x") {
			continue
		}
		lo, hi, _ := strings.Cut(fl[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		off, _ := strconv.ParseUint(fl[2], 16, 64)
		m := mapping{start: start, end: end, off: off, path: fl[5]}
		if !b.noSyms {
			m.file = b.file(fl[5])
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

func (b *backtracer) file(path string) *fileSyms {
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	key := fileKey{uint64(sys.Dev), sys.Ino, st.ModTime().UnixNano()}
	if fs, ok := b.files[key]; ok {
		return fs
	}
	fs := &fileSyms{}
	if ef, err := elf.Open(path); err == nil {
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD {
				fs.loads = append(fs.loads, p.ProgHeader)
			}
		}
		ef.Close()
	}
	if kf, err := kimage.Open(path); err == nil {
		fs.syms = kf.Symbols
		kf.Close()
	}
	b.files[key] = fs
	return fs
}

func (s *space) holds(addr uint64) bool {
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].end > addr })
	return i < len(s.maps) && s.maps[i].start <= addr
}

// symbolize names addr through the mapping holding it (binary search).
func (b *backtracer) symbolize(s *space, addr uint64) Frame {
	fr := Frame{Addr: "0x" + strconv.FormatUint(addr, 16)}
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].end > addr })
	if i == len(s.maps) || s.maps[i].start > addr {
		return fr
	}
	m := s.maps[i]
	fr.File = m.path
	if m.file == nil || m.file.syms == nil {
		return fr
	}
	foff := addr - m.start + m.off
	for _, p := range m.file.loads {
		if foff >= p.Off && foff < p.Off+p.Filesz {
			if sym, off, ok := m.file.syms.Lookup(foff - p.Off + p.Vaddr); ok {
				fr.Sym, fr.Off = sym.Name, off
			}
			break
		}
	}
	return fr
}

// walk follows the frame-pointer chain from the call's registers.
func (b *backtracer) walk(c *tracer.Call, tab *sysent.Table) []Frame {
	s := b.space(c.Pid)
	if !s.holds(c.IP) { // mapped by a call kboost did not stop at (an attach, a missed event)
		s.dirty = true
		s = b.space(c.Pid)
	}
	frames := []Frame{b.symbolize(s, c.IP)}
	word := uint64(tab.Arch.PtrSize)
	// The stack is read a chunk at a time (frames are close together: one
	// process_vm_readv serves most walks); the chunk ends where a read
	// reaches an unmapped page.
	var chunk []byte
	var base uint64
	fp := c.FP
	for len(frames) < b.max && fp != 0 {
		if fp < base || fp+2*word > base+uint64(len(chunk)) {
			n, err := tracer.ReadMem(c.Tid, fp, b.stack[:])
			if err != nil || uint64(n) < 2*word { // to the end of fp's page only
				lim := max(4096-fp%4096, 2*word)
				if n, err = tracer.ReadMem(c.Tid, fp, b.stack[:lim]); err != nil || uint64(n) < 2*word {
					break
				}
			}
			chunk, base = b.stack[:n], fp
		}
		buf := chunk[fp-base:]
		var next, ret uint64
		if word == 4 {
			next, ret = uint64(binary.LittleEndian.Uint32(buf)), uint64(binary.LittleEndian.Uint32(buf[4:]))
		} else {
			next, ret = binary.LittleEndian.Uint64(buf), binary.LittleEndian.Uint64(buf[8:])
		}
		if ret == 0 || !s.holds(ret) { // not a return address: code without frame pointers
			break
		}
		frames = append(frames, b.symbolize(s, ret))
		if next <= fp { // the chain must grow toward the stack's base
			break
		}
		fp = next
	}
	return frames
}
