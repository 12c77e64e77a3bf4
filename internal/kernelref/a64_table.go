package kernelref

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// A64Row is one line of the arm64 golden table:
//
//	[PRE,...:]WORD <TAB> OPTS <TAB> KPROBE <TAB> UPROBE [<TAB># note]
//
// PRE are the words of the function before the probed WORD (the symbol starts
// at the first one; the atomic back-scan walks them). OPTS is "-" or a comma
// list of nosym (no symbol covers the text: kallsyms fails, no back-scan),
// extable (the address has an exception-table entry) and mis=N (the probe
// address is N bytes past the word). KPROBE is what arch_prepare_kprobe() did:
// "reject EINVAL", "simulate HANDLER" or "slot W0,W1" (the instruction slot
// words). UPROBE is what prepare_uprobe()'s trap test and
// arch_uprobe_analyze_insn() did for the word at a user address + mis:
// "reject ERRNO", "simulate HANDLER" or "xol".
type A64Row struct {
	Pre     []uint32
	Word    uint32
	NoSym   bool
	ExTable bool
	Mis     int
	Kprobe  string
	Uprobe  string
	Note    string
	Line    int
}

// Query is the oracle query for the row's kprobe.
func (r *A64Row) Query() A64Kprobe {
	q := A64Kprobe{Text: append(append([]uint32{}, r.Pre...), r.Word), Probe: len(r.Pre), Mis: r.Mis, ExTable: r.ExTable}
	if r.NoSym {
		q.Sym = -1
	}
	return q
}

func (r *A64Row) key() string {
	var b strings.Builder
	for i, w := range r.Pre {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%08x", w)
	}
	if len(r.Pre) > 0 {
		b.WriteByte(':')
	}
	fmt.Fprintf(&b, "%08x\t%s", r.Word, r.opts())
	return b.String()
}

func (r *A64Row) opts() string {
	var o []string
	if r.NoSym {
		o = append(o, "nosym")
	}
	if r.ExTable {
		o = append(o, "extable")
	}
	if r.Mis != 0 {
		o = append(o, "mis="+strconv.Itoa(r.Mis))
	}
	if len(o) == 0 {
		return "-"
	}
	return strings.Join(o, ",")
}

func (r *A64Row) String() string {
	s := r.key() + "\t" + r.Kprobe + "\t" + r.Uprobe
	if r.Note != "" {
		s += "\t# " + r.Note
	}
	return s
}

// ReadA64Table parses an arm64 golden table.
func ReadA64Table(rd io.Reader) ([]A64Row, error) {
	var rows []A64Row
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) < 4 {
			return nil, fmt.Errorf("line %d: want 4 tab-separated fields: %w", n, ErrSyntax)
		}
		r := A64Row{Kprobe: f[2], Uprobe: f[3], Line: n}
		if len(f) > 4 {
			r.Note = strings.TrimPrefix(f[4], "# ")
		}
		ws := f[0]
		if pre, word, ok := strings.Cut(ws, ":"); ok {
			for _, p := range strings.Split(pre, ",") {
				v, err := strconv.ParseUint(p, 16, 32)
				if err != nil {
					return nil, fmt.Errorf("line %d: word %q: %w", n, p, ErrSyntax)
				}
				r.Pre = append(r.Pre, uint32(v))
			}
			ws = word
		}
		v, err := strconv.ParseUint(ws, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("line %d: word %q: %w", n, ws, ErrSyntax)
		}
		r.Word = uint32(v)
		if f[1] != "-" {
			for _, o := range strings.Split(f[1], ",") {
				switch {
				case o == "nosym":
					r.NoSym = true
				case o == "extable":
					r.ExTable = true
				case strings.HasPrefix(o, "mis="):
					if r.Mis, err = strconv.Atoi(o[4:]); err != nil {
						return nil, fmt.Errorf("line %d: %q: %w", n, o, ErrSyntax)
					}
				default:
					return nil, fmt.Errorf("line %d: unknown option %q: %w", n, o, ErrSyntax)
				}
			}
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

func a64ErrnoName(ret int) string {
	switch -ret {
	case 22:
		return "EINVAL"
	case 12:
		return "ENOMEM"
	case 95:
		return "EOPNOTSUPP"
	case 524:
		return "ENOTSUPP"
	}
	return fmt.Sprintf("errno(%d)", -ret)
}

// Resolve fills the row's KPROBE and UPROBE from the oracle.
func (o *OracleA64) Resolve(r *A64Row) error {
	k, err := o.Kprobe(r.Query())
	if err != nil {
		return err
	}
	switch {
	case k.Ret != 0:
		r.Kprobe = "reject " + a64ErrnoName(k.Ret)
	case k.Decode == "simulate":
		r.Kprobe = "simulate " + k.Handler
	default:
		if k.Restore != 4 {
			return fmt.Errorf("%s: slot resumes at addr%+d, not addr+4", r.key(), k.Restore)
		}
		r.Kprobe = fmt.Sprintf("slot %08x,%08x", k.Slot[0], k.Slot[1])
	}
	u, err := o.Uprobe(r.Word, r.Mis)
	if err != nil {
		return err
	}
	switch {
	case u.Ret != 0:
		r.Uprobe = "reject " + a64ErrnoName(u.Ret)
	case u.Kind == "simulate":
		r.Uprobe = "simulate " + u.Handler
	default:
		r.Uprobe = "xol"
	}
	return nil
}

// WriteA64Table writes the arm64 golden table: A64Cases() resolved by the
// kernel's code.
func (o *OracleA64) WriteA64Table(w io.Writer) error {
	var buf bytes.Buffer
	if err := a64Header(&buf, o.Build); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, c := range A64Cases() {
		r := c
		if seen[r.key()] {
			continue
		}
		seen[r.key()] = true
		if err := o.Resolve(&r); err != nil {
			return err
		}
		buf.WriteString(r.String())
		buf.WriteByte('\n')
	}
	_, err := w.Write(buf.Bytes())
	return err
}

const a64Code = `# internal/kernelref (arch/arm64/include/asm/insn.h predicates, arch/arm64/lib/insn.c,
# arch/arm64/kernel/probes/decode-insn.c, kprobes.c arch_prepare_kprobe,
# uprobes.c arch_uprobe_analyze_insn, kernel/events/uprobes.c is_trap_insn).
`

const a64Format = `#
# Format: [PRE,...:]WORD <TAB> OPTS <TAB> KPROBE <TAB> UPROBE [<TAB># note]
#   PRE: the function's words before the probed WORD (the symbol starts at the first).
#   OPTS: - | nosym (no symbol: no atomic back-scan), extable, mis=N (address + N bytes).
#   KPROBE: reject ERRNO | simulate HANDLER | slot INSN,BRK (the instruction slot words).
#   UPROBE: reject ERRNO | simulate HANDLER | xol (a uprobe on WORD at a user address + mis).
`

// a64Header writes the table's header: where the kernel code came from (a
// Debian tarball, or a hand tree with its provenance and the sha256 of every
// input file), how to regenerate it, and the format.
func a64Header(w io.Writer, b *BuildA64) error {
	if b.Tree == "" {
		fmt.Fprintf(w, `# kboost golden table: arm64 kprobes and uprobes decisions of Linux %s (Debian %s).
# Generated from %s by the kernel's own code, compiled for the host by
%s# Do not edit; regenerate with
#   KBOOST_ORACLE=1 KBOOST_UPDATE=1 go test ./internal/kernelref -run TestOracleA64Golden
# (without KBOOST_UPDATE the test checks this file against the kernel source).
%s`, b.Version, sourceName(b.Tarball), filepath.Base(b.Tarball), a64Code, a64Format)
		return nil
	}
	inputs, err := treeInputs(b.Tree, sourceMembersA64)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, `# kboost golden table: arm64 kprobes and uprobes decisions of Linux %s (files fetched by hand).
# Generated from the kernel files below by the kernel's own code, compiled for the host by
%s# No Debian suite carries this version: the files were fetched by hand into
# $KBOOST_CACHE/hand/%s (see internal/kernelref HandTree). Provenance:
`, b.Version, a64Code, filepath.Base(b.Tree))
	for _, l := range strings.Split(strings.TrimSpace(b.Provenance), "\n") {
		fmt.Fprintf(w, "#   %s\n", strings.TrimSpace(l))
	}
	fmt.Fprintf(w, "# Inputs (sha256, path below the tree):\n")
	for _, l := range inputs {
		fmt.Fprintf(w, "#   %s\n", l)
	}
	fmt.Fprintf(w, `# Do not edit; regenerate (with the files in place) with
#   KBOOST_UPDATE=1 go test ./internal/kernelref -run TestOracleA64GoldenHand
# (without KBOOST_UPDATE the test checks this file against those files; without
# them it checks only that this header names every input).
%s`, a64Format)
	return nil
}

// a64Masks are the (mask, value) pairs the kernel's arm64 probe code tests
// (insn.h, 6.1), plus the mask gaps kboost's boost-arm64 model closes; the case
// set probes each one's edges.
var a64Masks = []struct {
	name      string
	mask, val uint32
}{
	{"adr", 0x9F000000, 0x10000000}, {"adrp", 0x9F000000, 0x90000000},
	{"prfm_lit", 0xFF000000, 0xD8000000}, {"ldr_lit", 0xBF000000, 0x18000000},
	{"ldrsw_lit", 0xFF000000, 0x98000000}, {"exclusive", 0x3F800000, 0x08000000},
	{"load_ex", 0x3F400000, 0x08400000}, {"store_ex", 0x3F400000, 0x08000000},
	{"b", 0xFC000000, 0x14000000}, {"bl", 0xFC000000, 0x94000000},
	{"cbz", 0x7F000000, 0x34000000}, {"cbnz", 0x7F000000, 0x35000000},
	{"tbz", 0x7F000000, 0x36000000}, {"tbnz", 0x7F000000, 0x37000000},
	{"bcond", 0xFF000010, 0x54000000}, {"exception", 0xFF000000, 0xD4000000},
	{"svc", 0xFFE0001F, 0xD4000001}, {"brk", 0xFFE0001F, 0xD4200000},
	{"hint", 0xFFFFF01F, 0xD503201F}, {"br", 0xFFFFFC1F, 0xD61F0000},
	{"br_auth", 0xFEFFF800, 0xD61F0800}, {"blr", 0xFFFFFC1F, 0xD63F0000},
	{"blr_auth", 0xFEFFF800, 0xD63F0800}, {"ret", 0xFFFFFC1F, 0xD65F0000},
	{"ret_auth", 0xFFFFFBFF, 0xD65F0BFF}, {"eret", 0xFFFFFFFF, 0xD69F03E0},
	{"eret_auth", 0xFFFFFBFF, 0xD69F0BFF}, {"mrs", 0xFFF00000, 0xD5300000},
	{"msr_imm", 0xFFF8F01F, 0xD500401F}, {"msr_reg", 0xFFF00000, 0xD5100000},
	{"mrs_daif", 0xFFFFFFE0, 0xD53B4220}, {"msr_daif", 0xFFFFFFE0, 0xD51B4220},
	{"gap_bc_cond", 0xFF000010, 0x54000010}, {"gap_fp_ldr_lit", 0x3F000000, 0x1C000000},
	{"gap_udf", 0xFFFF0000, 0x00000000}, {"gap_mops", 0x3B200C00, 0x19000400},
}

// a64Named are instructions worth a row of their own (kernel text, PAC/BTI,
// LSE, the gaps).
var a64Named = []struct {
	w    uint32
	note string
}{
	{0xD503201F, "nop"}, {0xD503233F, "paciasp"}, {0xD50323BF, "autiasp"}, {0xD503245F, "bti c"},
	{0xD503249F, "bti j"}, {0xD50324DF, "bti jc"}, {0xD503241F, "bti"}, {0xD50320FF, "xpaclri"},
	{0xD503203F, "yield"}, {0xD503205F, "wfe"}, {0xD503207F, "wfi"}, {0xD503209F, "sev"},
	{0xD50320BF, "sevl"}, {0xD503229F, "csdb"}, {0xD503221F, "esb"}, {0xD50322DF, "clrbhb"},
	{0xA9BF7BFD, "stp x29, x30, [sp, #-16]!"}, {0x910003FD, "mov x29, sp"}, {0xA8C17BFD, "ldp x29, x30, [sp], #16"},
	{0xD65F03C0, "ret"}, {0xD65F0BFF, "retaa"}, {0xD65F0FFF, "retab"}, {0xD61F0200, "br x16"},
	{0xD63F0200, "blr x16"}, {0xD71F0A11, "braa x16, x17"}, {0xD63F081F, "blraaz x0"},
	{0xD69F03E0, "eret"}, {0xD69F0BFF, "eretaa"}, {0xD6BF03E0, "drps"},
	{0xD4000001, "svc #0"}, {0xD4000002, "hvc #0"}, {0xD4000003, "smc #0"}, {0xD4200000, "brk #0"},
	{0xD4200080, "brk #4 (kprobes)"}, {0xD42000A0, "brk #5 (uprobes)"}, {0xD42000C0, "brk #6 (kprobes ss)"},
	{0xD4210000, "brk #0x800 (BUG)"}, {0xD4400000, "hlt #0"}, {0xD4A00001, "dcps1"},
	{0xD50342DF, "msr daifset, #2"}, {0xD50342FF, "msr daifclr, #2"}, {0xD500401F, "cfinv"},
	{0xD503477F, "smstart"}, {0xD53B4220, "mrs x0, daif"}, {0xD53B4221, "mrs x1, daif"},
	{0xD53B4200, "mrs x0, nzcv"}, {0xD5384100, "mrs x0, sp_el0"}, {0xD538D080, "mrs x0, tpidr_el1"},
	{0xD5384020, "mrs x0, elr_el1"}, {0xD5384000, "mrs x0, spsr_el1"}, {0xD5385200, "mrs x0, esr_el1"},
	{0xD5386000, "mrs x0, far_el1"}, {0xD53C4020, "mrs x0, elr_el2"},
	{0xD51B4220, "msr daif, x0"}, {0xD5184100, "msr sp_el0, x0"}, {0xD50B7E20, "dc civac, x0"},
	{0xD5033FDF, "isb"}, {0xD5033BBF, "dmb ish"}, {0xD5033B9F, "dsb ish"}, {0xD50330FF, "sb"},
	{0xD503305F, "clrex"}, {0xD5233060, "tstart x0"}, {0xD503307F, "tcommit"}, {0xD5031000, "wfet x0"},
	{0xD508871F, "tlbi vmalle1is"}, {0xD5287E20, "sysl"},
	{0xF8200020, "ldadd x0, x0, [x1]"}, {0xC8A07C41, "cas x0, x1, [x2]"}, {0xC8E07C41, "casa x0, x1, [x2]"},
	{0x48207C82, "casp x0, x1, x2, x3, [x4]"}, {0xC8DFFC20, "ldar x0, [x1]"}, {0xC89FFC20, "stlr x0, [x1]"},
	{0xC85F7C20, "ldxr x0, [x1]"}, {0xC8027C20, "stxr w2, x0, [x1]"}, {0xC85FFC20, "ldaxr x0, [x1]"},
	{0xC802FC20, "stlxr w2, x0, [x1]"}, {0xC87F0820, "ldxp x0, x2, [x1]"}, {0xF8BFC020, "ldapr x0, [x1]"},
	{0x19000400, "cpyfp (MOPS)"}, {0x1D000400, "cpyp (MOPS)"}, {0x19C00400, "setp (MOPS)"},
	{0x54000010, "bc.eq (FEAT_HBC)"}, {0x54000040, "b.eq"}, {0x55000000, "unallocated (B.cond o1=1)"},
	{0x1C000040, "ldr s0, literal"}, {0x5C000040, "ldr d0, literal"}, {0x9C000040, "ldr q0, literal"},
	{0xDC000040, "unallocated FP literal opc=11"}, {0x18000040, "ldr w0, literal"}, {0x58000040, "ldr x0, literal"},
	{0x98000040, "ldrsw x0, literal"}, {0xD8000040, "prfm literal"}, {0x10000000, "adr x0, ."},
	{0x90000000, "adrp x0, ."}, {0x14000001, "b .+4"}, {0x94000001, "bl .+4"}, {0xB4000040, "cbz x0"},
	{0x35000040, "cbnz w0"}, {0x36000040, "tbz w0, #0"}, {0xB7F80040, "tbnz x0, #63"},
	{0x00000000, "udf #0"}, {0x0000FFFF, "udf #0xffff"}, {0x80000000, "SME space"},
	{0xA5E0A000, "sve ld1d"}, {0x1E204000, "fmov s0, s0"}, {0xAA1E03E9, "mov x9, x30 (ftrace)"},
	{0xD2800000, "mov x0, #0"},
}

// A64Cases returns the arm64 golden cases (KPROBE/UPROBE empty): every kernel
// mask at and around its value (each constrained bit flipped, each free bit set
// alone, all free bits set), the class table rows, every HINT, MSR (immediate)
// and DAIF/sysreg variants, named instructions, atomic back-scan sequences
// (window and symbol-start edges, LDAR/CAS matches), misaligned and
// exception-table probes, and 2048 pseudo-random words.
func A64Cases() []A64Row {
	var rows []A64Row
	add := func(w uint32, note string) { rows = append(rows, A64Row{Word: w, Note: note}) }
	for _, n := range a64Named {
		add(n.w, n.note)
	}
	for _, m := range a64Masks {
		add(m.val, m.name)
		add(m.val|^m.mask, m.name+" free bits set")
		for b := 0; b < 32; b++ {
			bit := uint32(1) << b
			if m.mask&bit != 0 {
				add(m.val^bit, fmt.Sprintf("%s bit %d flipped", m.name, b))
			} else {
				add(m.val|bit, "")
			}
		}
	}
	for c := uint32(0); c < 16; c++ {
		add(c<<25, fmt.Sprintf("class row %d", c))
		add(c<<25|0x81FFFFFF&^(0xF<<25), "")
		add(c<<25|0x12345678&^(0xF<<25), "")
	}
	for h := uint32(0); h < 128; h++ {
		add(0xD503201F|h<<5, fmt.Sprintf("hint #%d", h))
		add(0xD5032000|h<<5, "") // Rt = 0: not the hint mask
	}
	for op1 := uint32(0); op1 < 8; op1++ {
		for crm := uint32(0); crm < 16; crm++ {
			for op2 := uint32(0); op2 < 8; op2++ {
				add(0xD500401F|op1<<16|crm<<8|op2<<5, "") // MSR (immediate) space
			}
		}
	}
	for b := uint32(0); b < 21; b++ { // sysreg 0xDA11 with one field bit flipped, MRS and MSR
		add(0xD53B4220^1<<(b+5), "")
		add(0xD51B4220^1<<(b+5), "")
	}
	for _, sr := range []uint32{0xC200, 0xC201, 0xC208, 0xC210, 0xC212, 0xDA11, 0xDA10, 0xDA20, 0xDA28, 0xDA29,
		0xE200, 0xE201, 0xE208, 0xF200, 0xF201, 0xF210, 0x8000, 0xFFFF} {
		add(0xD5200000|sr<<5|3, fmt.Sprintf("mrs x3, sysreg %#x", sr))
		add(0xD5000000|sr<<5|3, fmt.Sprintf("msr sysreg %#x, x3", sr))
	}
	// Atomic sequences: PRE words before the probe.
	const nop, ldxr, stxr, ldar, stlr, casa, cas = 0xD503201F, 0xC85F7C20, 0xC8027C20, 0xC8DFFC20, 0xC89FFC20, 0xC8E07C41, 0xC8A07C41
	seq := func(note string, word uint32, pre ...uint32) {
		rows = append(rows, A64Row{Pre: pre, Word: word, Note: note})
	}
	nops := func(n int) []uint32 {
		s := make([]uint32, n)
		for i := range s {
			s[i] = nop
		}
		return s
	}
	for _, probe := range []uint32{nop, 0x91000400, 0x14000001, 0x58000040, 0xD65F03C0, 0xD4200000, stxr, ldxr} {
		seq("after ldxr", probe, ldxr)
		seq("after ldxr, stxr", probe, ldxr, stxr)
		seq("after ldar (load_ex mask)", probe, ldar)
		seq("after casa (load_ex mask)", probe, casa)
		seq("after cas (store_ex mask)", probe, ldxr, cas)
		seq("after stlr (store_ex mask)", probe, ldxr, stlr)
	}
	for _, gap := range []int{30, 31, 32, 33, 34, 40} {
		seq(fmt.Sprintf("ldxr %d words back", gap+1), nop, append([]uint32{ldxr}, nops(gap)...)...)
		seq(fmt.Sprintf("ldxr %d words back after a long prefix", gap+1), nop, append(append(nops(8), ldxr), nops(gap)...)...)
	}
	rows = append(rows, A64Row{Pre: []uint32{ldxr}, Word: nop, NoSym: true, Note: "no symbol: no back-scan"})
	for _, mis := range []int{1, 2, 3} {
		rows = append(rows, A64Row{Word: nop, Mis: mis, Note: "misaligned"})
		rows = append(rows, A64Row{Word: 0x14000001, Mis: mis, Note: "misaligned"})
	}
	rows = append(rows, A64Row{Word: nop, ExTable: true, Note: "exception table"},
		A64Row{Word: 0xF9400020, ExTable: true, Note: "ldr x0, [x1] in the exception table"},
		A64Row{Word: 0x14000001, ExTable: true, Note: "exception table"})
	rnd := rand.New(rand.NewSource(61))
	for i := 0; i < 2048; i++ {
		add(rnd.Uint32(), "")
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if (len(rows[i].Pre) > 0) != (len(rows[j].Pre) > 0) {
			return len(rows[i].Pre) == 0
		}
		return false
	})
	return rows
}

// A64Sample returns n words for the bulk comparison: every A64Cases word, then
// pseudo-random words (seeded), with every fourth one steered into the
// branch/exception/system class and every eighth into the load/store
// exclusive and literal space, where the kernel's masks are dense.
func A64Sample(n int, seed int64) []uint32 {
	var ws []uint32
	for _, r := range A64Cases() {
		ws = append(ws, r.Word)
	}
	rnd := rand.New(rand.NewSource(seed))
	for len(ws) < n {
		w := rnd.Uint32()
		switch len(ws) % 8 {
		case 1, 5:
			w = w&^(0x7<<26) | 0x5<<26 // bits 28:26 = 101: branch, exception, system
		case 3:
			w = w&^0x3F000000 | 0x08000000 // load/store exclusive, LDAR/STLR, CAS
		case 7:
			w = w&^0x3B000000 | 0x18000000 // literal loads (GPR and SIMD/FP)
		}
		ws = append(ws, w)
	}
	return ws[:n]
}
