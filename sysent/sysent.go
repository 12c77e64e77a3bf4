package sysent

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kboost/kboost/decode"
)

// Kind says how an argument is decoded.
type Kind uint8

// Argument kinds (the spec's names, in sysspec.Kinds order).
const (
	KindInt       Kind = iota // signed decimal
	KindUint                  // unsigned decimal
	KindPtr                   // address, hex
	KindFd                    // file descriptor
	KindDirfd                 // directory fd, AT_FDCWD by name
	KindPath                  // NUL-terminated path read from the tracee
	KindOflags                // open(2) flags
	KindMode                  // file mode, octal
	KindProt                  // PROT_*
	KindMmapflags             // MAP_*
	KindSignal                // signal number
)

var kindNames = []string{"int", "uint", "ptr", "fd", "dirfd", "path", "oflags", "mode", "prot", "mmapflags", "signal"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Arg is one declared argument.
type Arg struct {
	Name string
	Kind Kind
}

// Entry is one system call of one architecture.
type Entry struct {
	Nr    int
	Name  string
	Known bool // the kernel's prototype is known: Args is the whole list
	Args  []Arg
}

// Table is one architecture's system calls.
type Table struct {
	Arch      *decode.Arch
	also      []*decode.Arch // other instruction sets of the same system call ABI
	Audit     uint32         // AUDIT_ARCH_* value (seccomp_data.arch, ptrace_syscall_info.arch)
	openFlags []flagName     // O_* bits, which differ between x86 and ARM
	entries   []Entry
	byNr      []int // index into entries, -1 for holes
	byName    map[string]int
}

type flagName struct {
	bit  uint64
	name string
}

func newTable(a *decode.Arch, audit uint32, oflags []flagName, es []Entry, also ...*decode.Arch) *Table {
	t := &Table{Arch: a, also: also, Audit: audit, openFlags: oflags, entries: es, byName: make(map[string]int, len(es))}
	max := 0
	for _, e := range es {
		max = maxInt(max, e.Nr)
	}
	t.byNr = make([]int, max+1)
	for i := range t.byNr {
		t.byNr[i] = -1
	}
	for i, e := range es {
		t.byNr[e.Nr] = i
		t.byName[e.Name] = i
	}
	return t
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Tables lists every architecture's table.
var Tables = []*Table{TableX86_64, TableI386, TableARM64, TableARM}

// ForArch returns the table of a (Thumb shares ARM's), or nil.
func ForArch(a *decode.Arch) *Table {
	for _, t := range Tables {
		if t.Arch == a || slices.Contains(t.also, a) {
			return t
		}
	}
	return nil
}

// ForAudit returns the table for an AUDIT_ARCH value, or nil.
func ForAudit(audit uint32) *Table {
	for _, t := range Tables {
		if t.Audit == audit {
			return t
		}
	}
	return nil
}

// Entries returns the table's calls in number order.
func (t *Table) Entries() []Entry { return t.entries }

// ByNr returns the call numbered nr.
func (t *Table) ByNr(nr uint64) (Entry, bool) {
	if nr >= uint64(len(t.byNr)) || t.byNr[nr] < 0 {
		return Entry{}, false
	}
	return t.entries[t.byNr[nr]], true
}

// ByName returns the call named name.
func (t *Table) ByName(name string) (Entry, bool) {
	i, ok := t.byName[name]
	if !ok {
		return Entry{}, false
	}
	return t.entries[i], true
}

// Name is the call's name, or "syscall_N" for a number the table lacks.
func (t *Table) Name(nr uint64) string {
	if e, ok := t.ByNr(nr); ok {
		return e.Name
	}
	return fmt.Sprintf("syscall_%d", nr)
}

// Memory reads a tracee's memory for decoding.
type Memory interface {
	// ReadString reads a NUL-terminated string of at most max bytes at addr;
	// truncated says it was cut.
	ReadString(addr uint64, max int) (s string, truncated bool, err error)
}

// MaxPath bounds the strings read from a tracee.
const MaxPath = 4096

// Value is one decoded argument.
type Value struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Raw  string `json:"raw"`            // the register value, hex
	Text string `json:"text"`           // as printed
	Path string `json:"path,omitempty"` // a path argument's string
}

// Decode decodes e's arguments from their register values (truncated to the
// architecture's word size). mem may be nil: paths are then shown as
// addresses.
func (t *Table) Decode(e Entry, regs [6]uint64, mem Memory) []Value {
	args := e.Args
	if !e.Known {
		return nil
	}
	out := make([]Value, 0, len(args))
	for i, a := range args {
		if i >= len(regs) {
			break
		}
		v := t.word(regs[i])
		val := Value{Name: a.Name, Kind: a.Kind.String(), Raw: "0x" + strconv.FormatUint(v, 16)}
		val.Text, val.Path = t.format(a.Kind, v, mem)
		out = append(out, val)
	}
	return out
}

func (t *Table) word(v uint64) uint64 { return v & t.Arch.WordMask() }

// atFdcwd is AT_FDCWD (-100) on every architecture.
const atFdcwd = -100

func (t *Table) format(k Kind, v uint64, mem Memory) (text, path string) {
	switch k {
	case KindInt, KindFd:
		return strconv.FormatInt(int64(int32(uint32(v))), 10), ""
	case KindDirfd:
		if int32(uint32(v)) == atFdcwd {
			return "AT_FDCWD", ""
		}
		return strconv.FormatInt(int64(int32(uint32(v))), 10), ""
	case KindUint:
		return strconv.FormatUint(v, 10), ""
	case KindPtr:
		if v == 0 {
			return "NULL", ""
		}
		return "0x" + strconv.FormatUint(v, 16), ""
	case KindPath:
		if v == 0 {
			return "NULL", ""
		}
		if mem == nil {
			return "0x" + strconv.FormatUint(v, 16), ""
		}
		s, trunc, err := mem.ReadString(v, MaxPath)
		if err != nil {
			return "0x" + strconv.FormatUint(v, 16), ""
		}
		q := strconv.Quote(s)
		if trunc {
			q += "..."
		}
		return q, s
	case KindOflags:
		return t.openFlagText(v), ""
	case KindMode:
		return "0" + strconv.FormatUint(v&0o7777, 8), ""
	case KindProt:
		return bitText(v, protNames, "PROT_NONE"), ""
	case KindMmapflags:
		return mmapText(v), ""
	case KindSignal:
		return SignalName(int(int32(uint32(v)))), ""
	}
	return "0x" + strconv.FormatUint(v, 16), ""
}

// Result renders a return value: the number, or -1 ENAME for an error.
func (t *Table) Result(ret int64, isError bool) (text, errno string) {
	if isError {
		errno = ErrnoName(int(-ret))
		return "-1 " + errno, errno
	}
	return strconv.FormatInt(ret, 10), ""
}

func (t *Table) openFlagText(v uint64) string {
	acc := []string{"O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE"}[v&3]
	rest := bitText(v&^3, t.openFlags, "")
	if rest == "" {
		return acc
	}
	return acc + "|" + rest
}

func bitText(v uint64, names []flagName, zero string) string {
	if v == 0 {
		return zero
	}
	var parts []string
	for _, f := range names {
		if v&f.bit == f.bit && f.bit != 0 {
			parts = append(parts, f.name)
			v &^= f.bit
		}
	}
	if v != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(v, 16))
	}
	return strings.Join(parts, "|")
}

var protNames = []flagName{{1, "PROT_READ"}, {2, "PROT_WRITE"}, {4, "PROT_EXEC"}}

// MAP_* bits common to x86 and ARM (asm-generic/mman-common.h, mman.h).
var mmapNames = []flagName{
	{0x10, "MAP_FIXED"}, {0x20, "MAP_ANONYMOUS"}, {0x100, "MAP_GROWSDOWN"}, {0x800, "MAP_DENYWRITE"},
	{0x1000, "MAP_EXECUTABLE"}, {0x2000, "MAP_LOCKED"}, {0x4000, "MAP_NORESERVE"}, {0x8000, "MAP_POPULATE"},
	{0x10000, "MAP_NONBLOCK"}, {0x20000, "MAP_STACK"}, {0x40000, "MAP_HUGETLB"}, {0x100000, "MAP_FIXED_NOREPLACE"},
}

func mmapText(v uint64) string {
	typ := []string{"0", "MAP_SHARED", "MAP_PRIVATE", "MAP_SHARED_VALIDATE"}[v&3]
	rest := bitText(v&^3, mmapNames, "")
	if rest == "" {
		return typ
	}
	return typ + "|" + rest
}

// O_* bits shared by x86 and ARM (asm-generic/fcntl.h).
var openCommon = []flagName{
	{0o100, "O_CREAT"}, {0o200, "O_EXCL"}, {0o400, "O_NOCTTY"}, {0o1000, "O_TRUNC"}, {0o2000, "O_APPEND"},
	{0o4000, "O_NONBLOCK"}, {0o4010000, "O_SYNC"}, {0o10000, "O_DSYNC"}, {0o20000, "FASYNC"},
	{0o1000000, "O_NOATIME"}, {0o2000000, "O_CLOEXEC"}, {0o10000000, "O_PATH"},
}

// restartErrnos are the kernel's internal codes (include/linux/errno.h)
// that a tracer sees as the result of a call interrupted by a signal, at
// its exit stop: the kernel turns them into a restart or EINTR before the
// program runs again.
var restartErrnos = map[int]string{512: "ERESTARTSYS", 513: "ERESTARTNOINTR", 514: "ERESTARTNOHAND",
	515: "ENOIOCTLCMD", 516: "ERESTART_RESTARTBLOCK"}
