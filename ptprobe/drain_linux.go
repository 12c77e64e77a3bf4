//go:build linux && amd64

package ptprobe

import (
	"bufio"
	"encoding/binary"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/kboost/kboost/internal/ptregs"
	"github.com/kboost/kboost/tracer"
)

// recorder writes hit records (int3 hits from the tracer thread, jump hits
// drained from the ring by its own goroutine) to Out, one writer at a time,
// numbering each probe's records.
type recorder struct {
	mu   sync.Mutex
	w    *bufio.Writer
	json bool
	args bool
	pts  []string
	n    []uint64 // records written per probe
	// Thread pointers (fs base) of known threads, by process, and how many
	// threads each process had: a record names its thread through them.
	fsTid    map[[2]uint64]int
	nthreads map[int]int
	// Ring state: ring is the records' memory, ctr the counters' page.
	ring, ctr     []byte
	tail          uint64
	dropped, lost uint64
	stuckAt       uint64
	stuckSince    time.Time
}

// tornWait is how long the drainer waits on a reserved record that is not
// complete (its writer preempted, or killed mid-record) before counting it
// lost.
const tornWait = time.Second

func (r *recorder) word(b []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&b[off])) }

// hit writes one record; tid 0: unknown.
func (r *recorder) hit(i, pid, tid int, thread uint64, args []uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[i]++
	h := HitRecord{Point: r.pts[i], Pid: pid, Tid: tid, N: r.n[i], Thread: Hex(thread)}
	if r.args {
		for _, a := range args {
			h.Args = append(h.Args, Hex(a))
		}
	}
	writeHit(r.w, r.json, h)
}

// thread notes tid's thread pointer in pid.
func (r *recorder) thread(pid, tid int, fs uint64, isNew bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fs != 0 {
		r.fsTid[[2]uint64{uint64(pid), fs}] = tid
	}
	if isNew {
		r.nthreads[pid]++
	}
}

// drain writes every complete record of the ring up to its head and
// publishes the new tail; final (no tracee runs any more) counts the
// reserved but incomplete ones as lost. It returns how many it consumed.
func (r *recorder) drain(final bool) int {
	head := atomic.LoadUint64(r.word(r.ctr, headOff))
	done := 0
	for r.tail < head {
		slot := r.ring[(r.tail%RingRecords)*RecordSize:][:RecordSize]
		want := r.tail + 1
		seq := atomic.LoadUint64(r.word(slot, 0))
		switch {
		case seq == want:
			var w [recArgs + 6]uint64
			for k := range w {
				w[k] = atomic.LoadUint64(r.word(slot, 8*k))
			}
			if atomic.LoadUint64(r.word(slot, 0)) != want { // overwritten while read
				r.lost++
				break
			}
			r.emit(w[:])
		case seq > want: // the ring was lapped
			r.lost++
		default: // reserved, not yet complete
			if !final {
				if r.stuckAt != want {
					r.stuckAt, r.stuckSince = want, time.Now()
				}
				if time.Since(r.stuckSince) < tornWait {
					atomic.StoreUint64(r.word(r.ctr, tailOff), r.tail)
					return done
				}
			}
			r.lost++
		}
		r.tail++
		done++
	}
	atomic.StoreUint64(r.word(r.ctr, tailOff), r.tail)
	return done
}

func (r *recorder) emit(w []uint64) {
	i, pid := int(uint32(w[recID])), int(w[recID]>>32)
	if i >= len(r.pts) {
		r.lost++
		return
	}
	r.mu.Lock()
	tid, ok := r.fsTid[[2]uint64{uint64(pid), w[recThread]}]
	if !ok && r.nthreads[pid] <= 1 {
		tid = pid
	}
	r.mu.Unlock()
	r.hit(i, pid, tid, w[recThread], w[recArgs:recArgs+6])
}

// run drains until stop closes, then drains what is left.
func (r *recorder) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		if r.drain(false) > 0 {
			continue
		}
		select {
		case <-stop:
			r.drain(true)
			r.dropped = atomic.LoadUint64(r.word(r.ctr, droppedOff))
			return
		case <-time.After(500 * time.Microsecond):
		}
	}
}

func (r *recorder) flush() {
	r.mu.Lock()
	r.w.Flush()
	r.mu.Unlock()
}

// x86-64 words and constants for a new thread's thread pointer.
const (
	wFSBase     = 21
	nrClone     = 56
	nrFork      = 57
	nrVfork     = 58
	nrClone3    = 435
	cloneVM     = 0x100
	cloneSetTLS = 0x80000
)

// creation is what a creating thread, stopped at its clone, fork or vfork
// event, asked for: its own thread pointer, the new task's (clone's tls
// argument with CLONE_SETTLS, else the creator's) and whether the new task
// shares its memory (CLONE_VM, vfork).
type creation struct {
	ok          bool
	fs, childFS uint64
	sharesMem   bool
}

func created(parent int) creation {
	regs, err := ptregs.Get(parent)
	if err != nil || regs.L != ptregs.X86_64 {
		return creation{}
	}
	c := creation{ok: true, fs: regs.Word(wFSBase)}
	c.childFS = c.fs
	var flags, tls uint64
	switch regs.Word(wOrigRAX) {
	case nrClone:
		flags, tls = regs.Word(wRDI), regs.Word(wR8)
	case nrClone3: // struct clone_args: flags at 0, tls at 56
		var ca [64]byte
		if n, err := tracer.ReadMem(parent, regs.Word(wRDI), ca[:]); err == nil && n == len(ca) {
			flags, tls = binary.LittleEndian.Uint64(ca[0:]), binary.LittleEndian.Uint64(ca[56:])
		}
	case nrVfork:
		flags = cloneVM
	}
	if flags&cloneSetTLS != 0 {
		c.childFS = tls
	}
	c.sharesMem = flags&cloneVM != 0
	return c
}

// newThread notes the thread pointers of a creating thread and of the
// thread it created.
func (r *recorder) newThread(ev tracer.Event, c creation) {
	if !c.ok {
		r.thread(ev.Pid, ev.Tid, 0, true)
		return
	}
	r.thread(tgid(ev.Parent), ev.Parent, c.fs, false)
	r.thread(ev.Pid, ev.Tid, c.childFS, true)
}

// fsBaseAllowed: the kernel lets user code run rdfsbase (AT_HWCAP2's
// HWCAP2_FSGSBASE; the tracees run on the same kernel and CPU as kboost).
func fsBaseAllowed() bool {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return false
	}
	const atHWCAP2, hwcap2FSGSBASE = 26, 1 << 1
	for i := 0; i+16 <= len(b); i += 16 {
		if binary.LittleEndian.Uint64(b[i:]) == atHWCAP2 {
			return binary.LittleEndian.Uint64(b[i+8:])&hwcap2FSGSBASE != 0
		}
	}
	return false
}
