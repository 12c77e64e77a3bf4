package kernelref

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os/exec"
	"strings"
)

// A32Record is what the 32-bit ARM kernel code decided for one instruction
// (arch_prepare_kprobe, and can_optimize for an ARM-mode kernel).
type A32Record struct {
	Ret     int    // 0 or -errno
	Decode  int    // probes_decode_insn: 0 INSN_REJECTED, 1 INSN_GOOD, 2 INSN_GOOD_NO_SLOT
	Handler string // insn_handler ("-" none)
	Cond    int    // insn_check_cc: 0..15 probes_condition_checks[] (14 for AL), 16 thumb_check_cc
	Stack   int    // stack_space
	Opt     bool   // can_optimize() (ARM-mode kernel, registered probes)
	Direct  bool   // can_kprobe_direct_exec(register_usage_flags)
	ITStep  bool   // Thumb: insn_singlestep is t16_singlestep_it
	Slot    [8]byte
}

// String renders the record in the golden tables' words.
func (r A32Record) String() string {
	if r.Ret != 0 {
		return fmt.Sprintf("reject %d", r.Ret)
	}
	var b strings.Builder
	switch r.Decode {
	case 1:
		b.WriteString("slot")
	case 2:
		b.WriteString("simulate")
	default:
		fmt.Fprintf(&b, "decode%d", r.Decode)
	}
	fmt.Fprintf(&b, " %s cc%d stack%d", r.Handler, r.Cond, r.Stack)
	if r.Opt {
		b.WriteString(" opt")
	}
	if r.Direct {
		b.WriteString(" direct")
	}
	if r.ITStep {
		b.WriteString(" itstep")
	}
	return b.String()
}

// OracleA32 runs the 32-bit ARM oracle programs.
type OracleA32 struct {
	Build *BuildA32
	names [2][]string
}

// OpenA32 prepares (see PrepareA32) the oracles and reads their marker names.
func OpenA32(opts Options) (*OracleA32, error) {
	b, err := PrepareA32(opts)
	if err != nil {
		return nil, err
	}
	o := &OracleA32{Build: b}
	for i, thumb := range []bool{false, true} {
		out, err := exec.Command(b.Bin(thumb), "-names").Output()
		if err != nil {
			return nil, fmt.Errorf("%s -names: %v: %w", b.Bin(thumb), err, ErrTool)
		}
		o.names[i] = strings.Fields(string(out))
	}
	return o, nil
}

// Bulk decides each value: A32 words (thumb false), or Thumb values (a 32-bit
// instruction with its first halfword in bits 31..16, a 16-bit one in bits
// 15..0). For Thumb only the first 6 slot bytes are defined (the kernel leaves
// the last halfword of its slot copy uninitialised); the rest is cleared.
func (o *OracleA32) Bulk(values []uint32, thumb bool) ([]A32Record, error) {
	in := make([]byte, 4*len(values))
	for i, w := range values {
		binary.LittleEndian.PutUint32(in[4*i:], w)
	}
	bin := o.Build.Bin(thumb)
	cmd := exec.Command(bin, "-bulk")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s -bulk: %v: %s: %w", bin, err, stderr.String(), ErrTool)
	}
	if len(out) != 16*len(values) {
		return nil, fmt.Errorf("%s -bulk: %d answer bytes for %d values: %w", bin, len(out), len(values), ErrTool)
	}
	names := o.names[0]
	if thumb {
		names = o.names[1]
	}
	recs := make([]A32Record, len(values))
	for i := range recs {
		b := out[16*i : 16*i+16]
		r := &recs[i]
		r.Ret = int(int8(b[0]))
		r.Decode = int(b[1])
		r.Handler = "?"
		if int(b[2]) < len(names) {
			r.Handler = names[b[2]]
		}
		r.Cond = int(b[3])
		r.Stack = int(int16(binary.LittleEndian.Uint16(b[4:])))
		r.Opt, r.Direct, r.ITStep = b[6]&1 != 0, b[6]&2 != 0, b[6]&4 != 0
		copy(r.Slot[:], b[8:16])
		if thumb {
			r.Slot[6], r.Slot[7] = 0, 0
		}
	}
	return recs, nil
}
