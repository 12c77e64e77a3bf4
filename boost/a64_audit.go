package boost

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/kboost/kboost/decode"
)

// auditA64 is Auditor.Audit for the A64 policies: every word-aligned offset is
// an instruction (a trailing partial word does not decode), the ftrace site is
// the BL word of the -fpatchable-function-entry=2 pair, and each probe carries
// what arm_kprobe_decode_insn's atomic back-scan finds in the function.
func auditA64(au *Auditor, fn Func) (*FuncAudit, error) {
	p, env, mode := au.p, au.env, au.mode
	size := fn.Size
	if size == 0 {
		size = uint64(len(fn.Bytes))
	}
	if uint64(len(fn.Bytes)) < size {
		return nil, fmt.Errorf("function %s: %d bytes given for size %d: pass the symbol's bytes", fn.Name, len(fn.Bytes), size)
	}
	fn.Size = size
	a := &au.fa
	*a = FuncAudit{Func: fn, Policy: p, Mode: mode, FtraceOff: -1, DecodeFailOff: -1, env: env,
		Entries: a.Entries[:0], walk: a.walk[:0], OptReasons: a.OptReasons[:0]}
	words := a64Words(fn.Bytes[:size])
	for off := uint64(0); off < size; off += 4 {
		a.Entries = append(a.Entries, Entry{Off: off})
		e := &a.Entries[len(a.Entries)-1]
		// The kernel reads words, allocated or not: an entry decodes (for the
		// kernel) when it is a whole word; package decode's view is in Inst.
		_ = decode.ARM64.Decode(&e.Inst, fn.Bytes[off:size], fn.Addr+off)
		e.Len, e.DecodeOK = e.Inst.Len, off+4 <= size
		if !e.DecodeOK && a.DecodeFailOff < 0 {
			a.DecodeFailOff = int64(off)
		}
		a.walk = append(a.walk, off)
	}
	a.findFtraceA64(env, words)
	a.OptReasons = append(a.OptReasons, Reason{Rule: rOptUnsup.ID, Text: rOptUnsup.Desc})
	n := len(a.Entries)
	au.reserveReasons(n)
	s := &au.s
	for i := range a.Entries {
		e := &a.Entries[i]
		r, o := reasonsPerEntry*i, optReasonsPerEntry*i
		e.Decision.Reasons = au.arena[r : r : r+reasonsPerEntry]
		e.Decision.OptReasons = au.optArena[o : o : o+optReasonsPerEntry]
		a.probeA64(&s.pr, e.Off, words, env)
		p.decide(s, &e.Decision, env, false, mode)
	}
	return a, nil
}

// a64Words splits b into little-endian words (a trailing partial word dropped).
func a64Words(b []byte) []uint32 {
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}

// probeA64 fills pr for a probe at off: the generic function facts, the word,
// and the atomic back-scan (only at aligned offsets: the kernel refuses the
// others before it scans).
func (a *FuncAudit) probeA64(pr *probe, off uint64, words []uint32, env *Env) {
	*pr = a.probeAt(off, env)
	pr.atomic = 0
	i := off / 4
	if off%4 == 0 && i < uint64(len(words)) {
		pr.boundary = 1
		var in decode.Inst
		pr.readA64(&in, a.Func.Bytes[off:off+4], a.Func.Addr+off)
		if at, where := a.Policy.a64k().a64AtomicScan(words, off); at {
			pr.atomic, pr.atomicOff = 1, where
		}
	} else {
		pr.boundary = 0
		pr.decErr = errDecode
	}
}

// findFtraceA64 locates the function's ftrace location: from the table when
// known, else from the bytes (FtraceEntrySiteA64).
func (a *FuncAudit) findFtraceA64(env *Env, words []uint32) {
	fn := a.Func
	if !a.Policy.FtraceEntry {
		return
	}
	if a.ftraceTableKnown(env) {
		a.NotraceKnown = true
		if hit, _ := env.Sites.Ftrace(Span{fn.Addr, fn.Addr + fn.Size}); hit {
			for _, off := range a.walk {
				if h, _ := env.Sites.Ftrace(Span{fn.Addr + off, fn.Addr + off + 1}); h {
					a.FtraceOff, a.FtraceFrom = int64(off), "table"
					break
				}
			}
		}
		a.Notrace = a.FtraceOff < 0
		a.baseTraced(env)
		return
	}
	if off, ok := FtraceEntrySiteA64(words); ok && (!env.BootedEntry || bootedEntryA64(words)) {
		a.FtraceOff, a.FtraceFrom = int64(off), "bytes"
	}
	a.Notrace = a.FtraceOff < 0
	a.NotraceKnown = env.InferNotrace
	a.baseTraced(env)
}

// bootedEntryA64: the entry (after a BTI) is `mov x9, x30`, as
// ftrace_init_nop leaves a function that has an ftrace record.
func bootedEntryA64(words []uint32) bool {
	e := 0
	if len(words) > 0 && a64Hint.is(words[0]) && words[0]&0xF20 == 0x400 {
		e = 1
	}
	return e < len(words) && words[e] == a64MovX9LR
}

// FtraceEntrySiteA64 reports the offset of an arm64 function's ftrace location
// recognised from its words: with DYNAMIC_FTRACE_WITH_REGS the compiler puts
// two NOPs at the entry (-fpatchable-function-entry=2; after a BTI landing pad
// when there is one), ftrace_init_nop turns the first into `mov x9, x30`, and
// the second, which becomes `bl ftrace_caller`, is the ftrace location
// (ftrace_call_adjust adds 4). A probe on the first word is an ordinary one.
func FtraceEntrySiteA64(words []uint32) (off int, ok bool) {
	e := 0
	if len(words) > 0 && a64Hint.is(words[0]) && words[0]&0xF20 == 0x400 {
		e = 1 // BTI, BTI c/j/jc (HINT #32..#38 even)
	}
	if e+2 > len(words) {
		return 0, false
	}
	first, second := words[e], words[e+1]
	if (first == a64NOP || first == a64MovX9LR) && (second == a64NOP || a64BL.is(second)) {
		return 4 * (e + 1), true
	}
	return 0, false
}

// explainAtA64 is FuncAudit.ExplainAt for the A64 policies.
func explainAtA64(a *FuncAudit, off uint64) ([]Step, Decision, error) {
	if off >= a.Func.Size {
		_, err := a.At(off)
		return nil, Decision{}, err
	}
	words := a64Words(a.Func.Bytes[:a.Func.Size])
	s := new(scratch)
	a.probeA64(&s.pr, off, words, a.env)
	var d Decision
	a.Policy.decide(s, &d, a.env, true, a.Mode)
	i := sort.Search(len(a.walk), func(i int) bool { return a.walk[i] >= off })
	if i < len(a.walk) && a.walk[i] == off {
		d.OptReasons = a.Entries[i].Decision.OptReasons
	}
	return s.c.steps, d, nil
}
