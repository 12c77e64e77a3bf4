package kernelref

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Oracle answers questions with the kernel's own code: two host programs built
// from one kernel tree, one configured as an x86-64 kernel (CONFIG_X86_64, with
// IA32 emulation) and one as an i386 kernel (CONFIG_X86_32).
type Oracle struct {
	Build *Build
	mu    sync.Mutex
	procs map[int]*proc // by kernel word size in bits: 64, 32
}

type proc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// Open prepares (or reuses) a build and starts its programs.
func Open(opts Options) (*Oracle, error) {
	b, err := Prepare(opts)
	if err != nil {
		return nil, err
	}
	o := &Oracle{Build: b, procs: map[int]*proc{}}
	for bits, name := range map[int]string{64: "kref64", 32: "kref32"} {
		p, err := start(filepath.Join(b.Dir, name))
		if err != nil {
			o.Close()
			return nil, err
		}
		o.procs[bits] = p
	}
	return o, nil
}

func start(path string) (*proc, error) {
	cmd := exec.Command(path)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 4096), 1<<20)
	return &proc{cmd: cmd, in: in, out: sc}, nil
}

// Close stops the programs.
func (o *Oracle) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, p := range o.procs {
		p.in.Close()
		p.cmd.Wait()
		delete(o.procs, k)
	}
	return nil
}

func (o *Oracle) ask(bits int, line string) (map[string]string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.procs[bits]
	if p == nil {
		return nil, fmt.Errorf("kernelref: no %d-bit kernel oracle (closed?)", bits)
	}
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		return nil, fmt.Errorf("kernelref: write to oracle: %w", err)
	}
	if !p.out.Scan() {
		return nil, fmt.Errorf("kernelref: oracle ended: %v", p.out.Err())
	}
	kv := map[string]string{}
	for _, w := range strings.Fields(p.out.Text())[1:] {
		k, v, _ := strings.Cut(w, "=")
		kv[k] = v
	}
	if e := kv["error"]; e != "" {
		return nil, fmt.Errorf("kernelref: oracle refused %q: %s", line, e)
	}
	return kv, nil
}

// Kprobe is one registration: a probe at Func+Off, where Text holds the
// function's bytes from Func on (followed in memory by int3 bytes).
type Kprobe struct {
	Bits       int    // 64: an x86-64 kernel; 32: an i386 kernel
	Text       []byte // function bytes from its start; the probed instruction at Off
	Off        int
	Func       uint64 // the function's address
	Slot       uint64 // the address of the instruction slot get_insn_slot returns
	Preemption bool   // CONFIG_PREEMPTION
	Post       bool   // the kprobe has a post_handler
	Extable    bool   // the probe address has an exception-table entry
}

// KprobeResult is what arch_prepare_kprobe did.
type KprobeResult struct {
	Ret       int    // its return value: 0 or -errno
	Errno     string // "EINVAL", ... or "" when Ret == 0
	Len       int    // the kernel decoder's length of the probed instruction (0: undecodable)
	CanBoost  bool   // can_boost() on it (whatever the configuration)
	Boostable bool   // p->ainsn.boostable after registration
	Emulate   string // the emulate_op set by prepare_emulation: "jcc", "ret", ... or ""
	Slot      []byte // the bytes written to the slot
}

// Verdict maps the registration to what happens on a hit, following
// setup_singlestep() in arch/x86/kernel/kprobes/core.c (6.1): a boosted copy runs
// directly (!CONFIG_PREEMPTION and ainsn.boostable), else an emulate_op is called,
// else the copy is single-stepped in the slot with a trailing int3.
func (r KprobeResult) Verdict() string {
	switch {
	case r.Ret < 0:
		return "reject"
	case r.Boostable:
		return "boost"
	case r.Emulate != "":
		return "emulate"
	}
	return "singlestep"
}

// Kprobe runs arch_prepare_kprobe (can_probe, __copy_instruction,
// prepare_emulation, prepare_singlestep) on q.
func (o *Oracle) Kprobe(q Kprobe) (KprobeResult, error) {
	flags := ""
	if q.Preemption {
		flags += "p"
	}
	if q.Post {
		flags += "h"
	}
	if q.Extable {
		flags += "x"
	}
	if flags == "" {
		flags = "-"
	}
	kv, err := o.ask(q.Bits, fmt.Sprintf("K %d %s %x %x %s", q.Off, flags, q.Func, q.Slot, hex.EncodeToString(q.Text)))
	if err != nil {
		return KprobeResult{}, err
	}
	var r KprobeResult
	r.Ret, _ = strconv.Atoi(kv["ret"])
	if e := kv["err"]; e != "-" {
		r.Errno = e
	}
	r.Len, _ = strconv.Atoi(kv["len"])
	r.CanBoost = kv["canboost"] == "1"
	r.Boostable = kv["boostable"] == "1"
	if op := kv["op"]; op != "-" {
		r.Emulate = op
	}
	if s := kv["slot"]; s != "-" {
		r.Slot, _ = hex.DecodeString(s)
	}
	return r, nil
}

// DecodeResult is the kernel decoder's (insn_decode) view of a byte string.
type DecodeResult struct {
	OK  bool // insn_decode returned 0
	Len int
	// Field sizes in bytes, valid when OK.
	Emulate, Prefixes, Rex, Vex, OpcodeLen, ModRM, SIB, Disp, Imm, Imm2 int
	Opcode                                                              []byte
	RIPRel                                                              bool
}

// Decode runs the kernel's insn_decode on exactly b (the buffer ends after b) in
// 64-bit or 32-bit mode.
func (o *Oracle) Decode(bits int, b []byte) (DecodeResult, error) {
	kv, err := o.ask(64, fmt.Sprintf("D %d %s", bits, hexOrDash(b)))
	if err != nil {
		return DecodeResult{}, err
	}
	var r DecodeResult
	r.OK = kv["ret"] == "0"
	atoi := func(k string) int { n, _ := strconv.Atoi(kv[k]); return n }
	r.Len = atoi("len")
	if r.OK {
		r.Emulate, r.Prefixes, r.Rex, r.Vex = atoi("emu"), atoi("pfx"), atoi("rex"), atoi("vex")
		r.OpcodeLen, r.ModRM, r.SIB, r.Disp = atoi("op"), atoi("modrm"), atoi("sib"), atoi("disp")
		r.Imm, r.Imm2 = atoi("imm"), atoi("imm2")
		r.Opcode, _ = hex.DecodeString(kv["opcode"])
		r.RIPRel = kv["rip"] == "1"
	}
	return r, nil
}

// UprobeResult is what arch_uprobe_analyze_insn decided.
type UprobeResult struct {
	Ret    int    // 0 or -errno (-524 is ENOTSUPP)
	Errno  string // "ENOTSUPP", "ENOEXEC", ... or ""
	Len    int    // instruction length recorded by the chosen ops (0 when rejected)
	Ops    string // "branch" (emulated jmp/call/jcc/nop), "push" (emulated), "default" (single-stepped out of line)
	Fixups int    // defparam.fixups for "default"
	// Optimize: ARCH_UPROBE_FLAG_CAN_OPTIMIZE was set (7.x can_optimize(): the
	// NOP will be rewritten into a call after its first hit).
	Optimize bool
}

// Uprobe runs arch_uprobe_analyze_insn on b (padded with int3 to 16 bytes) for a
// 64-bit or 32-bit process on an x86-64 kernel.
func (o *Oracle) Uprobe(bits int, b []byte) (UprobeResult, error) {
	return o.UprobeAt(bits, b, 0x400000)
}

// UprobeAt is Uprobe with the instruction at user address addr (can_optimize
// refuses a NOP that crosses a page).
func (o *Oracle) UprobeAt(bits int, b []byte, addr uint64) (UprobeResult, error) {
	kv, err := o.ask(64, fmt.Sprintf("U %d %s %x", bits, hexOrDash(b), addr))
	if err != nil {
		return UprobeResult{}, err
	}
	var r UprobeResult
	r.Ret, _ = strconv.Atoi(kv["ret"])
	if e := kv["err"]; e != "-" {
		r.Errno = e
	}
	r.Len, _ = strconv.Atoi(kv["len"])
	if s := kv["ops"]; s != "-" {
		r.Ops = s
	}
	r.Fixups, _ = strconv.Atoi(kv["fixups"])
	r.Optimize = kv["opt"] == "1"
	return r, nil
}

// DecodeAt runs the kernel's insn_decode at each offset of text (the buffer
// ending at the end of text, at most 15 bytes) and returns the lengths, 0 where
// the kernel decoder fails. One round trip for any number of offsets.
func (o *Oracle) DecodeAt(bits int, text []byte, offs []uint32) ([]byte, error) {
	dir, err := os.MkdirTemp("", "kernelref-bulk")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tp, op, outp := filepath.Join(dir, "text"), filepath.Join(dir, "offs"), filepath.Join(dir, "out")
	ob := make([]byte, 4*len(offs))
	for i, off := range offs {
		binary.LittleEndian.PutUint32(ob[4*i:], off)
	}
	if err := os.WriteFile(tp, text, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(op, ob, 0o600); err != nil {
		return nil, err
	}
	kv, err := o.ask(64, fmt.Sprintf("B %d %s %s %s", bits, tp, op, outp))
	if err != nil {
		return nil, err
	}
	if kv["n"] != strconv.Itoa(len(offs)) {
		return nil, fmt.Errorf("kernelref: bulk decode did %s of %d offsets", kv["n"], len(offs))
	}
	out, err := os.ReadFile(outp)
	if err != nil {
		return nil, err
	}
	if len(out) != len(offs) {
		return nil, fmt.Errorf("kernelref: bulk decode wrote %d of %d lengths", len(out), len(offs))
	}
	return out, nil
}

func hexOrDash(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return hex.EncodeToString(b)
}
