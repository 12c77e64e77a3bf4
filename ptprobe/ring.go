package ptprobe

import (
	"encoding/binary"
	"fmt"
)

// Hit records of jump probes: a ring of RecordSize-byte records in the
// counters' memfd after its first page, shared by kboost and every probed
// process. A jump trampoline that records calls one routine of its slot
// page (RecordAt), which reserves a record with a locked xadd on the
// ring's head, writes the probe's index, the process's pid (a word of the
// process's own slot page, PidAt), the thread pointer (rdfsbase, where the
// CPU and kernel allow it), the six argument registers, and last the
// record's sequence number (its index + 1): a record is complete when its
// sequence number is its index's. kboost drains the ring while the tracees
// run and publishes how far it read (tail); a routine that finds the ring
// within ringSlack records of full drops the record and counts it instead
// (nothing in a tracee waits for kboost).
const (
	RecordSize = 128
	// RingRecords is the ring's capacity (a power of two).
	RingRecords = 1 << 16
	RingBytes   = RingRecords * RecordSize
	ringSlack   = 1 << 12

	// Words of the counters' page (after the per-probe counters).
	headOff    = 0x800
	tailOff    = 0x840
	droppedOff = 0x880

	// The record routine and the per-process words at the end of the code page.
	RecordAt  = PageSize - 192
	ringPtrAt = PageSize - 16
	PidAt     = PageSize - 8
)

// Record word offsets (uint64 words of a record).
const (
	recSeq    = 0 // index + 1, written last
	recID     = 1 // probe index | pid << 32
	recThread = 2 // fs base (0 where rdfsbase is not allowed)
	recArgs   = 3 // rdi, rsi, rdx, rcx, r8, r9
)

// routine assembles the record routine for a code page at code whose
// counters' page is at ctr (entered by call with the probe's index in eax,
// the flags already saved; it preserves every register but rax and the
// flags). fsBase says whether rdfsbase may run in the tracee.
func routine(code, ctr uint64, fsBase bool) []byte {
	var b []byte
	// ripRel appends an instruction ending in a rel32 to target.
	ripRel := func(ins []byte, target uint64) {
		b = append(b, ins...)
		rel := int64(target) - int64(code+RecordAt+uint64(len(b)))
		binary.LittleEndian.PutUint32(b[len(b)-4:], uint32(int32(rel)))
	}
	b = append(b, 0x51, 0x52, 0x56)                                       // push %rcx; push %rdx; push %rsi
	ripRel([]byte{0x48, 0x8b, 0x0d, 0, 0, 0, 0}, ctr+headOff)             // mov head(%rip),%rcx
	ripRel([]byte{0x48, 0x2b, 0x0d, 0, 0, 0, 0}, ctr+tailOff)             // sub tail(%rip),%rcx
	b = append(b, 0x48, 0x81, 0xf9)                                       // cmp $limit,%rcx
	b = binary.LittleEndian.AppendUint32(b, RingRecords-ringSlack)        //
	b = append(b, 0x73, 0)                                                // jae full (rel8 patched below)
	jae := len(b) - 1                                                     //
	b = append(b, 0xb9, 1, 0, 0, 0)                                       // mov $1,%ecx
	ripRel([]byte{0xf0, 0x48, 0x0f, 0xc1, 0x0d, 0, 0, 0, 0}, ctr+headOff) // lock xadd %rcx,head(%rip)
	b = append(b, 0x89, 0xca)                                             // mov %ecx,%edx
	b = append(b, 0x81, 0xe2)                                             // and $mask,%edx
	b = binary.LittleEndian.AppendUint32(b, RingRecords-1)                //
	b = append(b, 0x48, 0xc1, 0xe2, 7)                                    // shl $7,%rdx (RecordSize)
	ripRel([]byte{0x48, 0x03, 0x15, 0, 0, 0, 0}, code+ringPtrAt)          // add ring(%rip),%rdx
	ripRel([]byte{0x8b, 0x35, 0, 0, 0, 0}, code+PidAt)                    // mov pid(%rip),%esi
	b = append(b, 0x48, 0xc1, 0xe6, 0x20)                                 // shl $32,%rsi
	b = append(b, 0x48, 0x09, 0xc6)                                       // or %rax,%rsi
	b = append(b, 0x48, 0x89, 0x72, 8*recID)                              // mov %rsi,8(%rdx)
	if fsBase {
		b = append(b, 0xf3, 0x48, 0x0f, 0xae, 0xc6) // rdfsbase %rsi
	} else {
		b = append(b, 0x31, 0xf6, 0x0f, 0x1f, 0x00) // xor %esi,%esi; nopl (%rax)
	}
	b = append(b, 0x48, 0x89, 0x72, 8*recThread)                       // mov %rsi,16(%rdx)
	b = append(b, 0x48, 0x89, 0x7a, 8*recArgs)                         // mov %rdi,24(%rdx)
	b = append(b, 0x48, 0x8b, 0x34, 0x24)                              // mov (%rsp),%rsi   (the caller's rsi)
	b = append(b, 0x48, 0x89, 0x72, 8*(recArgs+1))                     // mov %rsi,32(%rdx)
	b = append(b, 0x48, 0x8b, 0x74, 0x24, 8)                           // mov 8(%rsp),%rsi  (rdx)
	b = append(b, 0x48, 0x89, 0x72, 8*(recArgs+2))                     // mov %rsi,40(%rdx)
	b = append(b, 0x48, 0x8b, 0x74, 0x24, 16)                          // mov 16(%rsp),%rsi (rcx)
	b = append(b, 0x48, 0x89, 0x72, 8*(recArgs+3))                     // mov %rsi,48(%rdx)
	b = append(b, 0x4c, 0x89, 0x42, 8*(recArgs+4))                     // mov %r8,56(%rdx)
	b = append(b, 0x4c, 0x89, 0x4a, 8*(recArgs+5))                     // mov %r9,64(%rdx)
	b = append(b, 0x48, 0x8d, 0x71, 0x01)                              // lea 1(%rcx),%rsi
	b = append(b, 0x48, 0x89, 0x32)                                    // mov %rsi,(%rdx)  (the sequence number, last)
	b = append(b, 0x5e, 0x5a, 0x59, 0xc3)                              // pop %rsi; pop %rdx; pop %rcx; ret
	b[jae] = byte(len(b) - (jae + 1))                                  // full:
	ripRel([]byte{0xf0, 0x48, 0xff, 0x05, 0, 0, 0, 0}, ctr+droppedOff) // lock incq dropped(%rip)
	b = append(b, 0x5e, 0x5a, 0x59, 0xc3)                              // pop %rsi; pop %rdx; pop %rcx; ret
	if len(b) > ringPtrAt-RecordAt {
		panic(fmt.Sprintf("ptprobe: record routine is %d bytes", len(b)))
	}
	return b
}
