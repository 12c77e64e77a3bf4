package render

// Field is a run of an instruction's bytes with one meaning (prefix, REX,
// opcode, ModRM, displacement, immediate, A64 word...).
type Field struct {
	Name  string // "opcode", "disp", ...
	Class string // CSS class: one of prefix rex vex opcode modrm sib disp imm word
	Off   int
	Bytes []string // hex, one per byte
	Text  string   // what the field says (from `explain`'s field list)
}

// Rule is one rule tried, in the kernel's order.
type Rule struct {
	ID      string
	Outcome string // pass, fail, decide...
	Text    string
}

// SlotByte is one byte of a slot image.
type SlotByte struct {
	Off  int
	Hex  string
	Kind string // copy, fixup (rebased displacement), jmp, int3, tail
}

// SlotLine is one instruction of the slot.
type SlotLine struct {
	Off   int
	Bytes string
	Asm   string
	Note  string
}

// Slot is the out-of-line copy: the bytes, where the jump back goes.
type Slot struct {
	Addr       string
	Bytes      []SlotByte
	Lines      []SlotLine
	InsnLen    int      // bytes of the copied instruction
	Code       []string // the probed instruction's bytes (hex), as in memory before the probe
	Addr0      string   // the probed address
	Resume     string   // addr+len, where the jump back (or the IP fixup) lands
	JumpOff    int      // offset of the jump back, -1 if none
	TrapOff    int      // offset of the second trap (int3/brk), -1 if none
	TrapRet    bool     // TrapOff is a return to the kernel\'s handler (ARM), not a trap
	Problems   []string
	Refused    string
	MaxInsn    int
	FixupFirst int // first byte of the rebased displacement, -1 if none
	FixupLen   int
	FixupNote  string
}

// Inst is an instruction drawn over its bytes.
type Inst struct {
	Addr   string
	Asm    string
	Len    int
	Fields []Field
	Error  string
}

// ExplainPage is `kboost explain`.
type ExplainPage struct {
	Title    string
	Arch     string
	Policy   string
	Config   string
	Inst     Inst
	FieldTab [][2]string
	Rules    []Rule
	Verdict  string // class
	Errno    string
	Slot     *Slot
	Detour   *Detour // an optimizable site's optprobe (explorer), else nil
	Links    []Link  // explorer: simulate, back
}

// Detour is an optimized probe: the jmp written over the site's first bytes,
// the detour buffer (the kernel's template: saved registers, the handler
// call; the copied instructions; the jump back) and its hit step by step.
type Detour struct {
	Addr, Buffer, Resume string
	OptLen               int
	Patched              []string   // the jmp at Addr (hex)
	Orig                 []string   // the OptLen original bytes (hex)
	TemplateLen          int        // 0: the file does not hold the template
	TemplateNote         string     // where the template comes from
	Copy                 []SlotByte // after the template: copies (copy, fixup) and the jmp back (jmp)
	Lines                []SlotLine // the buffer's instructions, template included
	Steps                []string
}

// Link is a hyperlink.
type Link struct{ Text, Href string }

// RegRow is one register before and after each run: in place (the
// instruction where it is) and out of line (the simulated hit).
type RegRow struct {
	Name                string
	Before, InPlace     string // in place: at entry, at the end
	HitBefore, Hit      string // the hit: at entry (the slot, or the handler's set-up), at the end
	Differs             bool   // the end states differ: the hit diverged here
	EntryDiffers        bool   // the hit starts with another value (the PC: the slot)
	Changed, HitChanged bool   // the run changed the register
}

// Trial is one register state.
type Trial struct {
	Title   string
	Verdict string // confirmed/... as the sim says
	HitPath string
	Rows    []RegRow
	Extra   []string // memory differences
}

// SimPage is `kboost sim`.
type SimPage struct {
	ExplainPage
	Path       string
	Forced     bool
	HitSteps   []string
	Sandbox    string
	Lazy       []string
	Trials     []Trial
	Conclusion string
}
