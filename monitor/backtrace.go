package monitor

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/kboost/kboost/internal/cfi"
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
	path  string
	syms  *kimage.SymTab
	loads []elf.ProgHeader
	// image, when set, is the file's contents, read from the tracee's
	// memory (the vDSO): path names no file.
	image []byte
	// cfi is read at the first unwind through the file (cfiRead).
	cfi     *cfi.Table
	cfiRead bool
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
	// vdso is the vDSO mapped at [vdsoStart, vdsoEnd), read from the
	// process's memory at the first view that has it and kept until an
	// exec (or a view with it elsewhere).
	vdso               *fileSyms
	vdsoStart, vdsoEnd uint64
	// stackEnd is the end of the main thread's stack ([stack]).
	stackEnd uint64
}

type backtracer struct {
	files map[fileKey]*fileSyms
	// vdsos holds the vDSO images read, by their contents: the processes
	// of one ABI share one image, parsed once.
	vdsos  map[string]*fileSyms
	spaces map[int]*space
	// views and vdsoReads count the maps views and vDSO images read.
	views, vdsoReads int
	max              int
	noSyms           bool
	stack            [4096]byte
	// threads are what each thread's walks read of its stack (snapshot).
	threads map[int]threadStack
	// sync makes every walk at its stop (tests compare the two); snaps
	// and misses count the snapshots taken and those a walk outran.
	sync          bool
	snaps, misses int
	// free are snapshot buffers to use again.
	free [][]byte
}

// snapshotsKept bounds the free snapshot buffers (a few stops are served
// between two Idles).
const snapshotsKept = 8

func newBacktracer(max int) *backtracer {
	if max <= 0 {
		max = 32
	}
	return &backtracer{files: map[fileKey]*fileSyms{}, vdsos: map[string]*fileSyms{}, spaces: map[int]*space{}, threads: map[int]threadStack{}, max: max}
}

// viewCalls may create executable mappings, the only ones a backtrace
// looks up: the view is re-read after them (an mmap or mprotect only with
// PROT_EXEC: protCalls' others do not stop for the view). Calls that only
// remove or move mappings (munmap, mremap, brk) leave addresses no stack
// holds, and a call's IP outside the view re-reads it.
var viewCalls = map[string]bool{"mmap": true, "mmap2": true, "mprotect": true, "pkey_mprotect": true,
	"execve": true, "execveat": true, "shmat": true, "remap_file_pages": true}

// execCalls replace the address space, its vDSO with it.
var execCalls = map[string]bool{"execve": true, "execveat": true}

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
	if s := b.spaces[c.Pid]; s != nil && execCalls[name] {
		s.vdso = nil
	}
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
		s.maps = b.readMaps(pid, s)
		s.dirty = false
	}
	return s
}

func (b *backtracer) readMaps(pid int, s *space) []mapping {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return nil
	}
	b.views++
	defer f.Close()
	var out []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) == 6 && fl[5] == "[stack]" {
			_, hi, _ := strings.Cut(fl[0], "-")
			s.stackEnd, _ = strconv.ParseUint(hi, 16, 64)
		}
		if len(fl) < 6 || !(strings.HasPrefix(fl[5], "/") || fl[5] == "[vdso]") || !strings.Contains(fl[1], "x") {
			continue
		}
		lo, hi, _ := strings.Cut(fl[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		off, _ := strconv.ParseUint(fl[2], 16, 64)
		m := mapping{start: start, end: end, off: off, path: fl[5]}
		if fl[5] == "[vdso]" {
			m.file = b.vdso(pid, s, start, end)
		} else {
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
	fs := &fileSyms{path: path}
	if ef, err := elf.Open(path); err == nil {
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD {
				fs.loads = append(fs.loads, p.ProgHeader)
			}
		}
		ef.Close()
	}
	if b.noSyms {
		b.files[key] = fs
		return fs
	}
	if kf, err := kimage.Open(path); err == nil {
		fs.syms = kf.Symbols
		kf.Close()
	}
	b.files[key] = fs
	return fs
}

// vdsoMax bounds the vDSO image read (x86's and arm64's are 2 pages).
const vdsoMax = 64 << 10

// vdso returns the vDSO mapped at [start, end) in pid: an ELF image
// (symbols, .eh_frame: the kernel's i386 system call entry
// __kernel_vsyscall, its signal return trampolines) that is in no file, so
// it is read from the process's memory, once per process and mapping.
func (b *backtracer) vdso(pid int, s *space, start, end uint64) *fileSyms {
	if s.vdso != nil && s.vdsoStart == start && s.vdsoEnd == end {
		return s.vdso
	}
	s.vdso = nil
	if end <= start || end-start > vdsoMax {
		return nil
	}
	img := make([]byte, end-start)
	b.vdsoReads++
	if n, err := tracer.ReadMem(pid, start, img); err != nil || n != len(img) {
		return nil
	}
	fs := b.vdsos[string(img)]
	if fs == nil {
		ef, err := elf.NewFile(bytes.NewReader(img))
		if err != nil {
			return nil
		}
		fs = &fileSyms{path: "[vdso]", image: img}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD {
				fs.loads = append(fs.loads, p.ProgHeader)
			}
		}
		if !b.noSyms {
			if kf, err := kimage.OpenBytes(img); err == nil {
				fs.syms = kf.Symbols
				kf.Close()
			}
		}
		b.vdsos[string(img)] = fs
	}
	s.vdso, s.vdsoStart, s.vdsoEnd = fs, start, end
	return fs
}

func (s *space) holds(addr uint64) bool {
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].end > addr })
	return i < len(s.maps) && s.maps[i].start <= addr
}

// at returns the mapping holding addr (binary search).
func (s *space) at(addr uint64) (mapping, bool) {
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].end > addr })
	if i == len(s.maps) || s.maps[i].start > addr {
		return mapping{}, false
	}
	return s.maps[i], true
}

// inVDSO says whether addr is in the vDSO.
func (s *space) inVDSO(addr uint64) bool {
	m, ok := s.at(addr)
	return ok && m.path == "[vdso]"
}

// vaddr turns addr, inside m, into the address the file's headers use.
func (m mapping) vaddr(addr uint64) (uint64, bool) {
	if m.file == nil {
		return 0, false
	}
	foff := addr - m.start + m.off
	for _, p := range m.file.loads {
		if foff >= p.Off && foff < p.Off+p.Filesz {
			return foff - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// symbolize names addr through the mapping holding it.
func (b *backtracer) symbolize(s *space, addr uint64) Frame {
	fr := Frame{Addr: "0x" + strconv.FormatUint(addr, 16)}
	m, ok := s.at(addr)
	if !ok {
		return fr
	}
	fr.File = m.path
	if m.file == nil || m.file.syms == nil {
		return fr
	}
	if va, ok := m.vaddr(addr); ok {
		if sym, off, ok := m.file.syms.Lookup(va); ok {
			fr.Sym, fr.Off = sym.Name, off
		}
	}
	return fr
}

// table returns the call frame information of the file mapped at addr and
// addr in its address space (nil: none).
func (b *backtracer) table(s *space, addr uint64) (*cfi.Table, uint64) {
	m, ok := s.at(addr)
	if !ok || m.file == nil {
		return nil, 0
	}
	f := m.file
	if !f.cfiRead {
		f.cfiRead = true
		var ef *elf.File
		var err error
		if f.image != nil {
			ef, err = elf.NewFile(bytes.NewReader(f.image))
		} else {
			ef, err = elf.Open(f.path)
		}
		if err == nil {
			f.cfi, _ = cfi.FromELF(ef) // none or unreadable: frame pointers only
			ef.Close()
		}
	}
	if f.cfi == nil {
		return nil, 0
	}
	va, ok := m.vaddr(addr)
	if !ok {
		return nil, 0
	}
	return f.cfi, va
}

// stack reads a thread's stack for an unwind. A live stack reads the
// stopped thread's memory a chunk at a time (frames are close together: one
// process_vm_readv serves most walks); a chunk ends where a read reaches an
// unmapped page. A snapshot is one chunk read at the stop and nothing else:
// the thread runs on while the snapshot is unwound, so a word outside it is
// not read (the walk ends there: missed), but for code, which stays.
type stack struct {
	tid   int
	word  uint64
	buf   []byte
	chunk []byte
	base  uint64
	live  bool
	// code, for a snapshot, is the view whose executable mappings are
	// read live.
	code *space
	// hi is the end of the highest word read; missed says a snapshot
	// lacked a word the walk needed.
	hi     uint64
	missed bool
}

func (st *stack) read(addr uint64) (uint64, bool) {
	if st.chunk == nil || addr < st.base || addr+st.word > st.base+uint64(len(st.chunk)) || addr+st.word < addr {
		if !st.live {
			// Code does not change while the thread runs: an unwinder's
			// look at the instructions at a pc (arm64's signal return
			// trampoline) reads them live.
			if st.code != nil && st.code.holds(addr) && st.code.holds(addr+st.word-1) {
				var w [8]byte
				if n, err := tracer.ReadMem(st.tid, addr, w[:st.word]); err == nil && uint64(n) == st.word {
					return binary.LittleEndian.Uint64(w[:]), true
				}
			}
			st.missed = true
			return 0, false
		}
		n, err := tracer.ReadMem(st.tid, addr, st.buf)
		if err != nil || uint64(n) < st.word { // to the end of addr's page only
			lim := max(4096-addr%4096, st.word)
			if n, err = tracer.ReadMem(st.tid, addr, st.buf[:lim]); err != nil || uint64(n) < st.word {
				return 0, false
			}
		}
		st.chunk, st.base = st.buf[:n], addr
	}
	st.hi = max(st.hi, addr+st.word)
	b := st.chunk[addr-st.base:]
	if st.word == 4 {
		return uint64(binary.LittleEndian.Uint32(b)), true
	}
	return binary.LittleEndian.Uint64(b), true
}

// unwindStart is what an unwind starts from: the call's registers, and
// the address-space view as of the stop (a view is never changed once
// read: a later one is a new slice).
type unwindStart struct {
	pid, tid int
	tab      *sysent.Table
	view     space
	ip, fp   uint64
	regs     []uint64
}

// threadStack is what the walks of one thread have read of its stack: up
// to top (the outermost frame's words, which stay where they are while the
// thread lives), at most span above the stack pointer.
type threadStack struct{ top, span uint64 }

// snapshotMax bounds one snapshot (a deeper stack is walked at the stop).
const snapshotMax = 256 << 10

// snapshotSlack is read past what earlier walks needed (a call site's
// frames differ a little from another's).
const snapshotSlack = 512

// snap is a walk taken at a stop and unwound later (unwindSnap), while the
// thread runs on.
type snap struct {
	start unwindStart
	st    stack
}

// start reads what an unwind of c needs at its stop: the view (re-read
// when it is stale or lacks c's IP: a mapping made by a call kboost did
// not stop at, by an attach or a missed event).
func (b *backtracer) start(c *tracer.Call, tab *sysent.Table) unwindStart {
	s := b.space(c.Pid)
	if !s.holds(c.IP) {
		s.dirty = true
		s = b.space(c.Pid)
	}
	return unwindStart{pid: c.Pid, tid: c.Tid, tab: tab, view: *s, ip: c.IP, fp: c.FP, regs: c.Regs}
}

// walk unwinds c's stack now, reading the stopped thread's memory, and
// learns how much of its stack a snapshot must hold.
func (b *backtracer) walk(c *tracer.Call, tab *sysent.Table) []Frame {
	us := b.start(c, tab)
	st := &stack{tid: c.Tid, word: uint64(tab.Arch.PtrSize), buf: b.stack[:], live: true}
	frames := b.unwind(&us, st)
	b.learn(c.Tid, c.SP, st.hi)
	return frames
}

// learn records that a walk of tid from stack pointer sp read up to hi.
func (b *backtracer) learn(tid int, sp, hi uint64) {
	if hi > sp && hi-sp <= snapshotMax {
		ts := b.threads[tid]
		ts.top, ts.span = max(ts.top, hi), max(ts.span, hi-sp)
		b.threads[tid] = ts
	}
}

// snapshot takes c's walk as a snap: the thread's stack from its stack
// pointer to what its earlier walks read (or, before any, to the end of
// the main thread's stack when the stack pointer is in it), in one read.
// It returns nil where the walk must be made now: a thread's first off
// the main stack (what to read is not known yet), a stack pointer outside
// the stack its walks read (a signal handler on an alternate stack, a
// coroutine), a stack too deep, or a range not wholly mapped.
func (b *backtracer) snapshot(c *tracer.Call, tab *sysent.Table) *snap {
	us := b.start(c, tab)
	// need must be read; what is read past it (the deepest walk's span
	// above this stack pointer, a slack) only may be.
	var need, want uint64
	if ts, ok := b.threads[c.Tid]; ok && c.SP < ts.top {
		need, want = ts.top, max(ts.top, c.SP+ts.span)+snapshotSlack
	} else if c.SP < us.view.stackEnd {
		need, want = us.view.stackEnd, us.view.stackEnd
	}
	if need <= c.SP || need-c.SP > snapshotMax {
		return nil
	}
	size := int(min(want-c.SP, snapshotMax))
	var buf []byte
	if k := len(b.free); k > 0 && cap(b.free[k-1]) >= size {
		buf, b.free = b.free[k-1][:size], b.free[:k-1]
	} else {
		buf = make([]byte, size)
	}
	n, err := tracer.ReadMem(c.Tid, c.SP, buf)
	if err != nil || uint64(n) < need-c.SP {
		b.free = append(b.free, buf)
		return nil
	}
	b.snaps++
	j := &snap{start: us, st: stack{tid: c.Tid, word: uint64(tab.Arch.PtrSize), chunk: buf[:n], base: c.SP}}
	j.st.code = &j.start.view
	return j
}

// unwindSnap walks j's snapshot. A walk that needed a word the snapshot
// lacked ends there, and the thread's next walk is made at its stop (and
// learns its stack again).
func (b *backtracer) unwindSnap(j *snap) []Frame {
	frames := b.unwind(&j.start, &j.st)
	if len(b.free) < snapshotsKept {
		b.free = append(b.free, j.st.chunk)
	}
	if j.st.missed {
		b.misses++
		b.threads[j.start.tid] = threadStack{}
	} else {
		b.learn(j.start.tid, j.st.base, j.st.hi)
	}
	return frames
}

// forget drops what kboost learnt of tid's stack (it exited or executed).
func (b *backtracer) forget(tid int) { delete(b.threads, tid) }

// unwind walks a thread's stack from its call's registers. Each
// frame is unwound by the call frame information (.eh_frame) of the file
// its pc is in, and by the frame pointer where no FDE covers the pc: a
// frame-pointer walk alone cannot tell a function that keeps no frame
// pointer (a C library's system call wrappers, code built with
// -fomit-frame-pointer), whose caller it then skips or whose garbage rbp it
// follows. The stack must grow toward its base frame by frame but at a
// frame whose pc is exact (the innermost, or one a signal interrupted)
// where the return address is in a register (cfi.Arch.LinkReg): a leaf
// there, arm64's system call wrappers, may keep no stack frame at all, its
// caller's stack pointer its own. The vDSO's table is its own .eh_frame,
// read from the tracee's memory (i386 tracees make every call through its
// __kernel_vsyscall; its signal return trampolines have signal frames). A
// pc in the vDSO, or one no table covers, may be the kernel's signal
// return trampoline (cfi.Arch.SigReturn: arm64's, tried before the vDSO's
// table), whose caller is the interrupted pc the signal frame holds.
func (b *backtracer) unwind(us *unwindStart, st *stack) []Frame {
	s := &us.view
	frames := []Frame{b.symbolize(s, us.ip)}
	word := st.word
	a := cfi.For(us.tab.Arch)
	if a == nil || len(us.regs) < a.Regs {
		a = nil
	}
	var regs cfi.Regs
	if a != nil {
		for col, v := range us.regs {
			regs.Set(col, v)
		}
	}
	pc, exact := us.ip, true // frame 0's pc is where the call returns to, inside its function
	fp := us.fp
	// lastFP is the frame pointer the last step read through when that
	// step was a frame-pointer one (0: it was not): two such steps in a
	// row must climb toward the stack's base. Where a frame-pointer step
	// restores the stack pointer exactly (cfi.Arch.FrameAtCFA), a call
	// frame information step may follow it whatever frame pointer it
	// restored (the caller keeps none: i386's C library calling the vDSO,
	// whose functions keep frame pointers but have no FDEs).
	var lastFP uint64
	for len(frames) < b.max {
		if a != nil {
			// The trampoline first: arm64's vDSO has CFI for it that
			// skips the interrupted pc.
			triedSig := false
			if a.SigReturn != nil && s.inVDSO(pc) {
				triedSig = true
				if ret, ok := a.SigReturn(pc, &regs, st.read); ok {
					if ret == 0 || !s.holds(ret) {
						break
					}
					frames = append(frames, b.symbolize(s, ret))
					pc, exact, lastFP = ret, true, 0 // the interrupted pc itself
					continue
				}
			}
			if t, va := b.table(s, pc); t != nil {
				if !exact {
					va-- // inside the call instruction: a call may be its function's last
				}
				sp, _ := regs.Get(a.SP)
				if !a.LinkReg {
					regs.Set(a.PC, pc)
				}
				ret, signal, end, err := t.Step(a, va, &regs, st.read)
				if err == nil {
					nsp, _ := regs.Get(a.SP)
					if end || ret == 0 || !s.holds(ret) || (nsp <= sp && !signal && !(nsp == sp && exact && a.LinkReg)) {
						break
					}
					frames = append(frames, b.symbolize(s, ret))
					pc, exact, lastFP = ret, signal, 0
					continue
				}
				// no FDE for pc (or one kboost cannot evaluate): the frame pointer
			}
			if a.SigReturn != nil && !triedSig {
				if ret, ok := a.SigReturn(pc, &regs, st.read); ok {
					if ret == 0 || !s.holds(ret) {
						break
					}
					frames = append(frames, b.symbolize(s, ret))
					pc, exact, lastFP = ret, true, 0 // the interrupted pc itself
					continue
				}
			}
			fp, _ = regs.Get(a.FP)
		}
		if fp == 0 || fp <= lastFP {
			break
		}
		next, ok1 := st.read(fp)
		ret, ok2 := st.read(fp + word)
		if !ok1 || !ok2 || ret == 0 || !s.holds(ret) { // not a return address: code without frame pointers
			break
		}
		frames = append(frames, b.symbolize(s, ret))
		if next <= fp && (a == nil || !a.FrameAtCFA) { // the chain must grow toward the stack's base
			break
		}
		if a != nil { // what the frame saved elsewhere is not known
			regs = cfi.Regs{}
			regs.Set(a.FP, next)
			regs.Set(a.SP, fp+2*word)
		}
		lastFP = fp
		fp, pc, exact = next, ret, false
	}
	return frames
}
