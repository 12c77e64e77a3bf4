package uprobe

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// Rule is one of kboost's own uprobe rules (the kernel's are boost rules).
type Rule struct {
	ID     string
	Source string // the kernel code the rule is about
	Desc   string
}

// kboost's rules about uprobes.
var (
	RuleMidInsn = &Rule{"uprobe.mid_instruction", "kernel/events/uprobes.c uprobe_register() (no boundary check)",
		"the offset is inside an instruction: the kernel installs it anyway, breaking the instruction (never hit, wrong results or SIGILL); kboost refuses it"}
	RuleOptimized = &Rule{"uprobe.optimized", "arch/x86/kernel/uprobes.c arch_uprobe_optimize() can_optimize()",
		"optimizable NOP in a 64-bit task: after the first hit it becomes a call into [uprobes-trampoline] (no trap)"}
	RuleRedZone = &Rule{"uprobe.redzone", "arch/x86/kernel/uprobes.c arch_uprobe_optimize() (call into the trampoline)",
		"hazard: the optimized call pushes its return address at -8(%rsp), and this function keeps data in the red zone below %rsp: it reads back corrupted values"}
	RuleGoRet = &Rule{"uprobe.go_uretprobe", "kernel/events/uprobes.c prepare_uretprobe() (return address hijack)",
		"hazard: a uretprobe replaces the return address on the stack, and the Go runtime moves and scans goroutine stacks: the program can crash (probe the function's RET instructions instead)"}
	RuleRetProbe = &Rule{"uprobe.uretprobe", "kernel/events/uprobes.c prepare_uretprobe()",
		"return probe: the entry site is probed as shown and the return address is redirected to the uretprobe trampoline"}
	RuleRepHits = &Rule{"uprobe.rep_hits", "arch/x86/kernel/uprobes.c default_post_xol_op() (IP back at the instruction)",
		"a rep-prefixed string instruction single-stepped runs one iteration per step and returns to the probed address: the probe is hit once per iteration, not once per execution"}
	RulePushfTF = &Rule{"uprobe.pushf_tf", "arch/x86/kernel/uprobes.c default_post_xol_op() (measured on 6.18)",
		"hazard: pushf single-stepped pushes the flags with TF set; the popf that restores them traps: the process dies with SIGTRAP"}
	RuleSyscallXOL = &Rule{"uprobe.syscall_xol", "arch/x86/kernel/uprobes.c (measured on 6.18)",
		"hazard: syscall single-stepped out of line: the process dies with SIGSEGV"}
	RuleXchgNop = &Rule{"uprobe.xchg_rexb_nop", "arch/x86/kernel/uprobes.c branch_setup_xol_ops() (case 0x90, measured on 6.18)",
		"hazard: opcode 0x90 with REX.B is xchg with %r8, but the kernel emulates it as a NOP: the exchange never happens and the program computes wrong values"}
	RuleNoFunc = &Rule{"uprobe.no_function", "",
		"no function symbol holds the address: decoded from there, instruction boundaries unknown"}
)

// Hex is an address or offset, written "0x..." in JSON.
type Hex uint64

// MarshalText writes 0x hex.
func (h Hex) MarshalText() ([]byte, error) {
	return []byte("0x" + strconv.FormatUint(uint64(h), 16)), nil
}

// UnmarshalText reads what MarshalText writes.
func (h *Hex) UnmarshalText(b []byte) error {
	v, err := strconv.ParseUint(strings.TrimPrefix(string(b), "0x"), 16, 64)
	if err != nil {
		return fmt.Errorf("uprobe: address %q: %w", b, err)
	}
	*h = Hex(v)
	return nil
}

// Bytes are written "48 8b 05" in JSON.
type Bytes []byte

// MarshalText writes spaced hex.
func (b Bytes) MarshalText() ([]byte, error) { return []byte(SpacedHex(b)), nil }

// UnmarshalText reads what MarshalText writes.
func (b *Bytes) UnmarshalText(t []byte) error {
	out := Bytes{}
	for _, f := range strings.Fields(string(t)) {
		v, err := strconv.ParseUint(f, 16, 8)
		if err != nil {
			return fmt.Errorf("uprobe: bytes %q: %w", t, err)
		}
		out = append(out, byte(v))
	}
	*b = out
	return nil
}

// SpacedHex writes b as "48 8b 05".
func SpacedHex(b []byte) string {
	var sb strings.Builder
	for i, c := range b {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(hex.EncodeToString([]byte{c}))
	}
	return sb.String()
}

// Site is the verdict at one probe point.
type Site struct {
	Arch       string `json:"arch"`   // the binary's, as --arch spells it
	Policy     string `json:"policy"` // the uprobes model (uprobe --policy)
	Func       string `json:"func,omitempty"`
	Off        uint64 `json:"off"`
	Addr       Hex    `json:"addr"`
	FileOffset Hex    `json:"file_offset"`
	Len        int    `json:"len"`
	Bytes      Bytes  `json:"bytes"`
	Asm        string `json:"asm"`
	Path       Path   `json:"path"`
	Errno      string `json:"errno,omitempty"`
	// Boundary: the point starts an instruction of the function's linear sweep.
	Boundary bool `json:"boundary"`
	// KernelAccepts: the kernel would install a probe here (mid-instruction
	// points included, which kboost refuses).
	KernelAccepts bool     `json:"kernel_accepts"`
	Reasons       []string `json:"reasons"`
	Details       []string `json:"details"`
	Hazards       []string `json:"hazards,omitempty"`
	// Within names the instruction a mid-instruction point falls in.
	Within string `json:"within,omitempty"`
	// RefCtrOffset is the file offset of a USDT probe's semaphore (the
	// kernel's ref_ctr_offset), when the site is one.
	RefCtrOffset Hex `json:"ref_ctr_offset,omitempty"`

	decision boost.Decision
}

func (s *Site) add(r *Rule, detail string) {
	s.Reasons = append(s.Reasons, r.ID)
	if detail == "" {
		detail = r.Desc
	}
	s.Details = append(s.Details, detail)
}

func (s *Site) hazard(r *Rule, detail string) {
	s.Hazards = append(s.Hazards, r.ID)
	s.add(r, detail)
}

// FuncAudit is every instruction boundary of one function.
type FuncAudit struct {
	Func    Func
	Kernel  *Kernel
	Sites   []Site
	RedZone *RedZoneUse // nil: the function keeps nothing below %rsp (as far as a linear sweep sees)
	insts   []decode.Inst
}

// MaxFuncSize bounds the functions Audit reads (memory stays bounded on
// hostile symbol tables).
const MaxFuncSize = 64 << 20

// Audit decides every instruction boundary of fn under k.
func Audit(b *Binary, k *Kernel, fn Func) (*FuncAudit, error) {
	if fn.Size > MaxFuncSize {
		return nil, &FormatError{Path: b.Path, Why: fmt.Sprintf("function %s has size %#x (more than kboost audits, %#x)", fn.Name, fn.Size, MaxFuncSize)}
	}
	// The kernel reads past the symbol's end (an instruction is decoded from
	// up to 15 bytes whatever follows): so does kboost.
	code, err := b.Read(fn.Addr, int(fn.Size)+15)
	if err != nil {
		return nil, err
	}
	size := min(fn.Size, uint64(len(code)))
	pol := k.PolicyFor(b.Arch)
	env := pol.DefaultEnv()
	env.Mode = b.Arch.Mode
	fa, err := pol.AuditFunc(boost.Func{Name: fn.Name, Addr: fn.Addr, Size: size, Bytes: code}, env)
	if err != nil {
		return nil, err
	}
	out := &FuncAudit{Func: fn, Kernel: k}
	for i := range fa.Entries {
		out.insts = append(out.insts, fa.Entries[i].Inst)
	}
	out.RedZone = redZoneUse(out.insts, b.Arch.Mode)
	for i := range fa.Entries {
		e := &fa.Entries[i]
		s, err := b.site(k, fn.Name, fn.Addr, e.Off, e.Inst, e.DecodeOK, e.Decision, e.Len)
		if err != nil {
			return nil, err
		}
		s.Boundary = true
		if s.Path == PathOptimized && out.RedZone != nil && k.RedZoneCall {
			s.hazard(RuleRedZone, fmt.Sprintf("hazard: the optimized call pushes its return address at -8(%%rsp), and %s keeps data below %%rsp (+%#x: %s): it reads back corrupted values", fn.Name, out.RedZone.Off, out.RedZone.Asm))
		}
		out.Sites = append(out.Sites, s)
	}
	return out, nil
}

// site builds the Site of one decided instruction.
func (b *Binary) site(k *Kernel, fname string, faddr, off uint64, in decode.Inst, ok bool, d boost.Decision, n int) (Site, error) {
	addr := faddr + off
	fo, err := b.ExecOffset(addr)
	if err != nil {
		return Site{}, err
	}
	s := Site{Arch: b.Arch.Name, Policy: k.Name, Func: fname, Off: off, Addr: Hex(addr), FileOffset: Hex(fo), Len: n, decision: d}
	if ok {
		s.Bytes = Bytes(append([]byte(nil), in.Bytes()...))
		s.Asm = decode.Format(&in, nil)
	} else {
		raw, _ := b.Read(addr, max(n, 1))
		s.Bytes, s.Asm = raw, "(bad)"
	}
	for _, r := range d.Reasons {
		if r.Rule == "uprobe.no_boundary_check" {
			continue
		}
		s.Reasons = append(s.Reasons, r.Rule)
		s.Details = append(s.Details, r.Text)
	}
	switch {
	case d.Verdict == boost.Reject:
		s.Path, s.Errno = PathRefused, d.Errno.String()
	case d.Verdict == boost.Emulate:
		s.Path = PathEmulated
		if d.Optimizable {
			s.Path = PathOptimized
			s.add(RuleOptimized, "")
		}
		if ok && slices.Contains(d.ReasonIDs(), "uprobe.emulate_nop") && in.Enc == decode.EncLegacy && in.Map == decode.MapOne && in.Opcode == 0x90 && in.Rex&1 != 0 {
			s.hazard(RuleXchgNop, "")
		}
	default:
		s.Path = PathSingleStep
		switch {
		case !ok:
		case isRepString(&in):
			s.add(RuleRepHits, "")
		case in.Enc == decode.EncLegacy && in.Map == decode.MapOne && in.Opcode == 0x9C:
			s.hazard(RulePushfTF, "")
		case in.Enc == decode.EncLegacy && in.Map == decode.Map0F && in.Opcode == 0x05:
			s.hazard(RuleSyscallXOL, "")
		}
	}
	s.KernelAccepts = s.Path != PathRefused
	return s, nil
}

// isHintNop: 0F 18-1F with a memory operand (nopl and the hint NOPs) never
// accesses memory.
func isHintNop(in *decode.Inst) bool {
	return in.Enc == decode.EncLegacy && in.Map == decode.Map0F && in.Opcode >= 0x18 && in.Opcode <= 0x1F
}

// isRepString: a string instruction (ins, outs, movs, cmps, stos, lods, scas)
// with a rep prefix.
func isRepString(in *decode.Inst) bool {
	if in.Enc != decode.EncLegacy || in.Map != decode.MapOne || in.LastRep == 0 {
		return false
	}
	o := in.Opcode
	return o >= 0x6C && o <= 0x6F || o >= 0xA4 && o <= 0xA7 || o >= 0xAA && o <= 0xAF
}

// Request is a probe point in a binary: a function and offset, or a virtual
// address; Return for a uretprobe.
type Request struct {
	USDT    string // "PROVIDER/NAME": the site of that .note.stapsdt probe
	Symbol  string
	Off     uint64
	Addr    uint64
	HasAddr bool
	Return  bool
}

func (r Request) String() string {
	s := ""
	switch {
	case r.USDT != "":
		s = "usdt/" + r.USDT
	case r.HasAddr:
		s = fmt.Sprintf("%#x", r.Addr)
	case r.Off != 0:
		s = fmt.Sprintf("%s+%#x", r.Symbol, r.Off)
	default:
		s = r.Symbol
	}
	if r.Return {
		s += "%return"
	}
	return s
}

// PointError is a request kboost cannot parse or resolve.
type PointError struct {
	Point, Why string
	Err        error
}

func (e *PointError) Error() string { return fmt.Sprintf("uprobe: %q: %s", e.Point, e.Why) }
func (e *PointError) Unwrap() error { return e.Err }

// ParseTarget splits "BIN[:SYM[+OFF][%return]|:0xADDR]" into the file and the
// request (nil: the whole file).
func ParseTarget(s string) (string, *Request, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, nil, nil
	}
	path, pt := s[:i], s[i+1:]
	if path == "" {
		return "", nil, &PointError{Point: s, Why: "no file before ':' (want BIN:SYMBOL, BIN:SYMBOL+OFF or BIN:0xADDR)"}
	}
	r, err := ParseRequest(pt)
	if err != nil {
		return "", nil, err
	}
	return path, &r, nil
}

// ParseRequest parses "SYM[+OFF][%return]", "0xADDR" (OFF decimal or 0x
// hex) or "usdt/PROVIDER/NAME".
func ParseRequest(pt string) (Request, error) {
	var r Request
	if u, ok := strings.CutPrefix(pt, "usdt/"); ok {
		p, n, ok := strings.Cut(u, "/")
		if !ok || !validSym(p) || !validSym(n) {
			return r, &PointError{Point: pt, Why: "want usdt/PROVIDER/NAME (see kboost uprobe list)"}
		}
		r.USDT = u
		return r, nil
	}
	if p, ok := strings.CutSuffix(pt, "%return"); ok {
		pt, r.Return = p, true
	}
	if h, ok := strings.CutPrefix(pt, "0x"); ok {
		v, err := strconv.ParseUint(h, 16, 64)
		if err != nil {
			return r, &PointError{Point: pt, Why: "want 0x and hex digits (a virtual address as readelf/nm show it)"}
		}
		r.Addr, r.HasAddr = v, true
		return r, nil
	}
	sym, off, hasOff := strings.Cut(pt, "+")
	if !validSym(sym) {
		return r, &PointError{Point: pt, Why: "want a symbol name (letters, digits, _ . @ $), SYMBOL+OFF or 0xADDR"}
	}
	r.Symbol = sym
	if hasOff {
		v, err := strconv.ParseUint(off, 0, 64)
		if err != nil {
			return r, &PointError{Point: pt, Why: "offset: want decimal or 0x hex"}
		}
		r.Off = v
	}
	if r.Return && r.Off != 0 {
		return r, &PointError{Point: pt, Why: "a return probe goes on the function entry (no offset)"}
	}
	return r, nil
}

func validSym(s string) bool {
	if s == "" || len(s) > 512 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '.' || c == '@' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Check decides one request: the site at its address, with the hazards of the
// request itself (a mid-instruction point, a uretprobe on Go).
func Check(b *Binary, k *Kernel, r Request) (Site, *FuncAudit, error) {
	if r.USDT != "" {
		return b.checkUSDT(k, r)
	}
	var fn Func
	var addr uint64
	if r.HasAddr {
		addr = r.Addr
		f, ok := b.FuncAt(addr)
		if !ok {
			return b.bareSite(k, r)
		}
		fn = f
	} else {
		f, ok := b.Func(r.Symbol)
		if !ok {
			return Site{}, nil, &PointError{Point: r.String(), Err: ErrNoSymbol,
				Why: fmt.Sprintf("no function %s in %s (symbols from %s; give 0xADDR for an address)", r.Symbol, b.Path, b.SymFrom)}
		}
		if r.Off >= f.Size {
			return Site{}, nil, &PointError{Point: r.String(), Why: fmt.Sprintf("offset %#x is past the end of %s (size %#x)", r.Off, f.Name, f.Size)}
		}
		fn, addr = f, f.Addr+r.Off
	}
	fa, err := Audit(b, k, fn)
	if err != nil {
		return Site{}, nil, err
	}
	off := addr - fn.Addr
	var s Site
	found := false
	for i := range fa.Sites {
		x := &fa.Sites[i]
		if x.Off == off {
			s, found = *x, true
			break
		}
		if x.Off < off && off < x.Off+uint64(x.Len) {
			// The kernel decodes whatever starts at the offset.
			s = midSite(b, k, fn, off, x)
			found = true
			break
		}
	}
	if !found {
		return Site{}, fa, &PointError{Point: r.String(), Why: "not inside the function"}
	}
	s.Reasons, s.Details, s.Hazards = append([]string(nil), s.Reasons...), append([]string(nil), s.Details...), append([]string(nil), s.Hazards...)
	if r.Return {
		s.add(RuleRetProbe, "")
		if b.Go {
			s.hazard(RuleGoRet, "")
		}
	}
	return s, fa, nil
}

// checkUSDT decides the site of a USDT probe, with its semaphore's file offset.
func (b *Binary) checkUSDT(k *Kernel, r Request) (Site, *FuncAudit, error) {
	us, err := b.USDT()
	if err != nil {
		return Site{}, nil, err
	}
	for _, u := range us {
		if u.Provider+"/"+u.Name == r.USDT {
			s, fa, err := Check(b, k, Request{Addr: uint64(u.Addr), HasAddr: true})
			s.RefCtrOffset = u.SemaphoreOffset
			return s, fa, err
		}
	}
	return Site{}, nil, &PointError{Point: r.String(), Err: ErrNoSymbol, Why: fmt.Sprintf("no USDT probe %s in %s (kboost uprobe list shows them)", r.USDT, b.Path)}
}

// midSite is a point inside instruction x: what the kernel would make of the
// bytes there, refused by kboost.
func midSite(b *Binary, k *Kernel, fn Func, off uint64, x *Site) Site {
	addr := fn.Addr + off
	raw, _ := b.Read(addr, 16)
	in, err := decode.Decode(raw, b.Arch.Mode, addr)
	d := k.PolicyFor(b.Arch).ClassifyBytes(raw, b.Arch.Mode, addr)
	s, serr := b.site(k, fn.Name, fn.Addr, off, in, err == nil, d, max(in.Len, 1))
	if serr != nil {
		s = Site{Func: fn.Name, Off: off, Addr: Hex(addr)}
	}
	s.KernelAccepts = s.Path != PathRefused
	s.Within = fmt.Sprintf("%s+%#x: %s (%s)", fn.Name, x.Off, x.Asm, SpacedHex(x.Bytes))
	kern := "the kernel installs it"
	if !s.KernelAccepts {
		kern = "the kernel refuses it too (" + s.Errno + ")"
	}
	s.Reasons, s.Details, s.Hazards = nil, nil, nil
	s.hazard(RuleMidInsn, fmt.Sprintf("+%#x is byte %d of %s; %s, and the bytes there decode as %s", off, off-x.Off, s.Within, kern, s.Asm))
	s.Path, s.Errno = PathRefused, "EILSEQ"
	return s
}

// bareSite decides an address no function symbol holds.
func (b *Binary) bareSite(k *Kernel, r Request) (Site, *FuncAudit, error) {
	raw, err := b.Read(r.Addr, 16)
	if err != nil {
		return Site{}, nil, &PointError{Point: r.String(), Why: err.Error(), Err: ErrNotMapped}
	}
	in, derr := decode.Decode(raw, b.Arch.Mode, r.Addr)
	d := k.PolicyFor(b.Arch).ClassifyBytes(raw, b.Arch.Mode, r.Addr)
	s, err := b.site(k, "", r.Addr, 0, in, derr == nil, d, max(in.Len, 1))
	if err != nil {
		return Site{}, nil, &PointError{Point: r.String(), Why: err.Error(), Err: ErrNotMapped}
	}
	s.add(RuleNoFunc, "")
	if r.Return && b.Go {
		s.hazard(RuleGoRet, "")
	}
	return s, nil, nil
}
