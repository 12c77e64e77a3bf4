//go:build linux && amd64

package tracer

import (
	"encoding/binary"

	"github.com/kboost/kboost/sysent"
)

// The x86-64 system call instruction clobbers rcx (the return address) and
// r11 (the flags), so a program keeps nothing in them across a call: at the
// call's entry stop kboost may point rip at a stub and pass the return
// address in rcx and the call's sequence number in r11. The stub stores rax
// and r11 into the thread's slot and jumps to rcx, so the call needs no
// exit stop.
//
// One thread's stub (64 bytes of code; its 32-byte data slot holds saved
// rcx, saved r11, the result and the sequence number):
//
//	R:    mov %rcx, save_rcx(%rip)   a restarted call enters at E-2, which
//	      mov %r11, save_r11(%rip)   jumps here: the syscall below clobbers
//	      syscall                    both registers, so they are kept in the
//	R+16: mov save_rcx(%rip), %rcx   slot around it
//	      mov save_r11(%rip), %r11
//	      jmp E
//	E-2:  jmp R                      (the kernel restarts a call at ip-2)
//	E:    mov %rax, result(%rip)
//	      mov %r11, seq(%rip)
//	      jmp *%rcx
var x86Defer = &deferSpec{
	table:     sysent.TableX86_64,
	slotCode:  64,
	slotData:  32,
	restarted: 16,
	entry:     34,
	tail:      50,
	saved:     7,
	words:     deferWords{pc: 16, ret: 11, seq: 6, rv: 10, nr: 15, args: [6]int{14, 13, 12, 7, 9, 8}},
	maxIP:     0x7fffffffffff, // vsyscall emulation kills a task whose ip its tracer moved
	stub:      x86Stub,
}

// x86Stub writes slot k's code (at code) for its data slot at data.
func x86Stub(buf []byte, code, data uint64) {
	const (
		saveRcx = 0
		saveR11 = 8
		result  = 16
		seq     = 24
	)
	o := 0
	rel := func(op []byte, field uint64) { // an instruction ending in a rip-relative disp32
		end := o + len(op) + 4
		o += copy(buf[o:], op)
		binary.LittleEndian.PutUint32(buf[o:], uint32(int32(int64(data+field)-int64(code+uint64(end)))))
		o += 4
	}
	raw := func(b ...byte) { o += copy(buf[o:], b) }
	rel([]byte{0x48, 0x89, 0x0d}, saveRcx) // mov %rcx, save_rcx(%rip)
	rel([]byte{0x4c, 0x89, 0x1d}, saveR11) // mov %r11, save_r11(%rip)
	raw(0x0f, 0x05)                        // syscall
	rel([]byte{0x48, 0x8b, 0x0d}, saveRcx) // mov save_rcx(%rip), %rcx
	rel([]byte{0x4c, 0x8b, 0x1d}, saveR11) // mov save_r11(%rip), %r11
	raw(0xeb, 0x02)                        // jmp E
	raw(0xeb, 0xde)                        // E-2: jmp R
	rel([]byte{0x48, 0x89, 0x05}, result)  // E: mov %rax, result(%rip)
	rel([]byte{0x4c, 0x89, 0x1d}, seq)     // mov %r11, seq(%rip)
	raw(0xff, 0xe1)                        // jmp *%rcx
	for ; o < len(buf); o++ {
		buf[o] = 0xcc
	}
}

// deferSpecs are the calling modes whose calls may return through a stub.
var deferSpecs = map[uint32]*deferSpec{sysent.TableX86_64.Audit: x86Defer}
