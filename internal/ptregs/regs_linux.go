//go:build linux && (amd64 || 386 || arm64 || arm)

package ptregs

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

const ntPRSTATUS = 1

// Regs is one tracee's register set as the kernel gave it.
type Regs struct {
	L   *Layout
	raw [maxLen]byte
}

// Get reads tid's registers.
func Get(tid int) (*Regs, error) {
	r := &Regs{}
	iov := unix.Iovec{Base: &r.raw[0]}
	iov.SetLen(len(r.raw))
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETREGSET, uintptr(tid),
		ntPRSTATUS, uintptr(unsafe.Pointer(&iov)), 0, 0)
	if errno != 0 {
		return nil, fmt.Errorf("PTRACE_GETREGSET(NT_PRSTATUS): %w", errno)
	}
	for _, l := range hostLayouts {
		if uint64(l.Len) == uint64(iov.Len) {
			r.L = l
			return r, nil
		}
	}
	return nil, fmt.Errorf("PTRACE_GETREGSET(NT_PRSTATUS): %d bytes, no register set this tracer knows", iov.Len)
}

// Set writes r back to tid.
func (r *Regs) Set(tid int) error {
	iov := unix.Iovec{Base: &r.raw[0]}
	iov.SetLen(r.L.Len)
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SETREGSET, uintptr(tid),
		ntPRSTATUS, uintptr(unsafe.Pointer(&iov)), 0, 0)
	if errno != 0 {
		return fmt.Errorf("PTRACE_SETREGSET(NT_PRSTATUS): %w", errno)
	}
	return nil
}

// Skip makes the system call tid is stopped at the entry of not run (it
// then returns what SetWord(L.Rv) leaves at its exit); r is written back.
func (r *Regs) Skip(tid int) error {
	if r.L.skip != nil {
		return r.L.skip(tid)
	}
	r.SetWord(r.L.OrigNr, ^uint64(0))
	return r.Set(tid)
}

// Word returns register word i (zero-extended).
func (r *Regs) Word(i int) uint64 {
	if r.L.Word == 4 {
		return uint64(binary.LittleEndian.Uint32(r.raw[i*4:]))
	}
	return binary.LittleEndian.Uint64(r.raw[i*8:])
}

// SetWord sets register word i (truncated to the layout's word).
func (r *Regs) SetWord(i int, v uint64) {
	if r.L.Word == 4 {
		binary.LittleEndian.PutUint32(r.raw[i*4:], uint32(v))
		return
	}
	binary.LittleEndian.PutUint64(r.raw[i*8:], v)
}

// Dwarf returns the registers by DWARF column (Layout.Dwarf).
func (r *Regs) Dwarf() []uint64 {
	out := make([]uint64, len(r.L.Dwarf))
	for col, i := range r.L.Dwarf {
		out[col] = r.Word(i)
	}
	return out
}

// PC, SP and FP are the instruction, stack and frame pointers.
func (r *Regs) PC() uint64 { return r.Word(r.L.PC) }
func (r *Regs) SP() uint64 { return r.Word(r.L.SP) }
func (r *Regs) FP() uint64 { return r.Word(r.L.FP) }

// PC reads a stopped tracee's instruction pointer.
func PC(tid int) (uint64, error) {
	r, err := Get(tid)
	if err != nil {
		return 0, err
	}
	return r.PC(), nil
}
