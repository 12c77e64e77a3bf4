package cli

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/jsonv"
	"github.com/kboost/kboost/internal/render"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kimage"
	"github.com/spf13/pflag"
)

// The --format flag of opcodes, explain, sim and audit: pictures drawn by
// internal/render from the data the command computed.

func addFormatFlag(fl *pflag.FlagSet, p *string, usage string, kinds ...string) {
	fl.StringVar(p, "format", "text", "output format: "+usage)
	setValues(fl, "format", kinds...)
}

// checkFormat validates --format against the kinds the command draws and
// against --json.
func checkFormat(format string, jsonOut bool, kinds ...string) error {
	for _, k := range kinds {
		if format == k {
			if jsonOut && format != "text" {
				return usagef("--json and --format %s: choose one", format)
			}
			return nil
		}
	}
	return usagef("--format %q: want one of %s", format, strings.Join(kinds, ", "))
}

// ruleText is a rule id with its registered description.
func ruleText(id string) string {
	if r, ok := boost.RuleByID(id); ok {
		return r.Desc
	}
	return ""
}

// reasonTexts is the texts of d's reasons, in order (a record's details).
func reasonTexts(d *boost.Decision) []string {
	t := make([]string, len(d.Reasons))
	for i, r := range d.Reasons {
		t[i] = r.Text
	}
	return t
}

func verdictClass(d *boost.Decision) string { return d.Verdict.String() }

// decisionTitle is a cell's hover text: verdict, errno, the rules in order and
// the deciding rule's text.
func decisionTitle(d *boost.Decision) string {
	t := d.Verdict.String()
	if d.Verdict == boost.Reject {
		t += " " + d.Errno.String()
	}
	if n := len(d.Reasons); n > 0 {
		t += " [" + strings.Join(ruleIDs(d.Reasons), " > ") + "]"
		if x := d.Reasons[n-1].Text; x != "" {
			t += ": " + x
		}
	}
	return t
}

// x86GridPage draws the x86 opcode maps of one policy, or of two (--diff).
func x86GridPage(arch *decode.Arch, pols []*boost.Policy, names []string) *render.GridPage {
	p := &render.GridPage{Policy: pols[0].Name}
	p.Title = fmt.Sprintf("kboost opcodes: %s, policy %s", arch.Name, pols[0].Name)
	p.Subtitle = "Plain form of each opcode (no prefixes, register ModRM, preemption off so boostability shows); row = high nibble, column = low nibble. Hover a cell for its rules."
	if len(pols) == 2 {
		p.Policy2 = pols[1].Name
		p.Title = fmt.Sprintf("kboost opcodes: %s, %s vs %s", arch.Name, pols[0].Name, pols[1].Name)
	}
	var labels, rows []string
	for i := 0; i < 16; i++ {
		labels = append(labels, fmt.Sprintf("%x", i))
		rows = append(rows, fmt.Sprintf("%x_", i))
	}
	groups := render.Table{Title: "group opcodes (verdict by ModRM.reg)", Head: []string{"map", "opcode", "policy", "by /reg"}}
	for _, n := range names {
		var grids [][256]boost.Cell
		for _, pol := range pols {
			grids = append(grids, pol.OpcodeGrid(gridMaps[n], arch.Mode))
		}
		g := render.Grid{Title: "map " + n, ColLabels: labels, RowLabels: rows, Cells: make([][]render.Cell, 16)}
		for i := 0; i < 256; i++ {
			rc := make([]render.Cell, len(grids))
			for k := range grids {
				c := &grids[k][i]
				rc[k] = x86Cell(n, c)
				if rc[k].Letter == "g" {
					var parts []string
					for r := 0; r < 8; r++ {
						if c.RegOK[r] {
							parts = append(parts, fmt.Sprintf("/%d %s %s", r, c.RegMne[r], c.Reg[r].Verdict))
						}
					}
					groups.Rows = append(groups.Rows, []string{n, fmt.Sprintf("%02x", c.Opcode), pols[k].Name, strings.Join(parts, ", ")})
				}
			}
			cell := rc[0]
			if len(rc) == 2 {
				cell.Class2, cell.Letter2 = rc[1].Class, rc[1].Letter
				cell.Differs = rc[0].Class != rc[1].Class || rc[0].Letter != rc[1].Letter || rc[0].Verdict != rc[1].Verdict ||
					groupDiffers(&grids[0][i], &grids[1][i])
				cell.Title = pols[0].Name + ": " + rc[0].Title + "\n" + pols[1].Name + ": " + rc[1].Title
			}
			g.Cells[i/16] = append(g.Cells[i/16], cell)
		}
		p.Grids = append(p.Grids, g)
	}
	if len(groups.Rows) > 0 {
		p.Extra = append(p.Extra, groups)
	}
	return p
}

// groupDiffers reports a group opcode whose verdict by ModRM.reg differs
// between two grids.
func groupDiffers(a, b *boost.Cell) bool {
	for r := 0; r < 8; r++ {
		if a.RegOK[r] != b.RegOK[r] || a.RegOK[r] && (a.Reg[r].Verdict != b.Reg[r].Verdict) {
			return true
		}
	}
	return false
}

func x86Cell(mapName string, c *boost.Cell) render.Cell {
	rc := render.Cell{Key: fmt.Sprintf("%s:%02x", mapName, c.Opcode), Letter: cellCode(c)}
	switch c.Kind {
	case "op":
		rc.Verdict = c.Decision.Verdict.String()
		rc.Class = rc.Verdict
		if rc.Letter == "g" {
			rc.Class = "group"
		}
		rc.Title = fmt.Sprintf("%02x %s: %s", c.Opcode, c.Mnemonic, decisionTitle(&c.Decision))
		if c.Group {
			for r := 0; r < 8; r++ {
				if c.RegOK[r] {
					rc.Title += fmt.Sprintf("\n/%d %s: %s", r, c.RegMne[r], decisionTitle(&c.Reg[r]))
				}
			}
		}
	default:
		rc.Class = c.Kind
		rc.Title = fmt.Sprintf("%02x: %s", c.Opcode, c.Kind)
	}
	return rc
}

// armGridPage draws an ARM encoding space for one policy or two.
func armGridPage(arch *decode.Arch, l *boost.ArmGridLayout, pols []*boost.Policy) *render.GridPage {
	p := &render.GridPage{Policy: pols[0].Name}
	p.Title = fmt.Sprintf("kboost opcodes: %s, policy %s", arch.Name, pols[0].Name)
	if len(pols) == 2 {
		p.Policy2 = pols[1].Name
		p.Title = fmt.Sprintf("kboost opcodes: %s, %s vs %s", arch.Name, pols[0].Name, pols[1].Name)
	}
	var gs []*boost.ArmGrid
	for _, pol := range pols {
		gs = append(gs, pol.ArmGrid(l))
	}
	p.Subtitle = fmt.Sprintf("The encoding space: rows %s, columns bits %s then %s; each cell summarizes the verdicts of the encodings with words in it (lower case: they differ, the letter is the most frequent). Probes at %#x.", l.RowBits, l.ColHi, l.ColLo, gs[0].Addr)
	g := render.Grid{Title: arch.Name + " encoding space", RowLabels: l.RowLabels, RowNames: l.RowNames}
	for hi := 0; hi < l.Cols/4; hi++ {
		g.ColGroups = append(g.ColGroups, fmt.Sprintf("%03b", hi))
		for lo := 0; lo < 4; lo++ {
			g.ColLabels = append(g.ColLabels, fmt.Sprint(lo))
		}
	}
	for r := 0; r < l.Rows; r++ {
		var row []render.Cell
		for c := 0; c < l.Cols; c++ {
			var rc []render.Cell
			for _, ag := range gs {
				rc = append(rc, armCell(ag, r, c))
			}
			cell := rc[0]
			if len(rc) == 2 {
				cell.Class2, cell.Letter2 = rc[1].Class, rc[1].Letter
				cell.Differs = rc[0].Letter != rc[1].Letter
				cell.Title = pols[0].Name + ": " + rc[0].Title + "\n" + pols[1].Name + ": " + rc[1].Title
			}
			row = append(row, cell)
		}
		g.Cells = append(g.Cells, row)
	}
	p.Grids = []render.Grid{g}
	t := render.Table{Title: "encodings per class (by the verdict of most sample words), " + pols[0].Name, Head: []string{"class", "encodings", "boost", "singlestep", "emulate", "reject", "mixed"}}
	for i := range gs[0].Classes {
		cs := &gs[0].Classes[i]
		if len(cs.Encs) == 0 {
			continue
		}
		t.Rows = append(t.Rows, []string{cs.Class.String(), fmt.Sprint(len(cs.Encs)), fmt.Sprint(cs.Count[boost.Boost]), fmt.Sprint(cs.Count[boost.SingleStep]),
			fmt.Sprint(cs.Count[boost.Emulate]), fmt.Sprint(cs.Count[boost.Reject]), fmt.Sprint(cs.Mixed)})
	}
	p.Extra = append(p.Extra, t)
	return p
}

func armCell(g *boost.ArmGrid, r, c int) render.Cell {
	cell := &g.Cells[r][c]
	code := cell.Code()
	rc := render.Cell{Key: fmt.Sprintf("%s:%d:%d", g.Layout.Name, r, c), Letter: code, Class: render.LetterClass(code)}
	var encs []string
	for i, ei := range cell.Encs {
		if i == 12 {
			encs = append(encs, fmt.Sprintf("... %d more", len(cell.Encs)-i))
			break
		}
		e := &g.Encs[ei]
		encs = append(encs, fmt.Sprintf("%s: %s [%s]", e.Op.Name, a64VerdictText(e), a64Rule(e)))
	}
	rc.Title = fmt.Sprintf("row %s, col %03b %02b: %s", g.Layout.RowLabels[r], c>>2, c&3, code)
	if len(encs) > 0 {
		rc.Title += "\n" + strings.Join(encs, "\n")
	}
	if cell.Undefined {
		rc.Title += "\n(unallocated carve-outs)"
	}
	return rc
}

// runOpcodesPicture is `kboost opcodes --format svg|html [--diff P1,P2]`.
func runOpcodesPicture(out io.Writer, arch *decode.Arch, policy, diff, mapName, format string) error {
	var names []string
	if diff != "" {
		names = strings.Split(diff, ",")
		if len(names) != 2 || names[0] == "" || names[1] == "" {
			return usagef("--diff %q: want two policies, P1,P2 (see 'kboost policies')", diff)
		}
	} else {
		names = []string{policy}
	}
	var pols []*boost.Policy
	for _, n := range names {
		pol, err := pickPolicy(n, arch)
		if err != nil {
			return err
		}
		pols = append(pols, pol)
	}
	p, err := gridPage(arch, pols, mapName)
	if err != nil {
		return err
	}
	return writePicture(out, format, func(w io.Writer) error { return render.GridSVG(w, p) },
		func(w io.Writer) error { return render.GridHTML(w, p) })
}

// gridPage is the opcode picture of arch under one or two policies.
func gridPage(arch *decode.Arch, pols []*boost.Policy, mapName string) (*render.GridPage, error) {
	if l := armGridLayouts[arch]; l != nil {
		if mapName != "" {
			return nil, usagef("--map is for x86 opcode maps")
		}
		return armGridPage(arch, l, pols), nil
	}
	names := []string{"one", "0f", "0f38", "0f3a"}
	if mapName != "" {
		if _, ok := gridMaps[mapName]; !ok {
			return nil, usagef("--map %q: want one of one, 0f, 0f38, 0f3a", mapName)
		}
		names = []string{mapName}
	}
	return x86GridPage(arch, pols, names), nil
}

// instPicture draws an instruction's fields over its bytes.
func instPicture(in *decode.Inst, derr error) render.Inst {
	ri := render.Inst{Addr: fmt.Sprintf("%#x", in.Addr), Asm: asmOf(in, derr), Len: in.Len}
	if derr != nil {
		ri.Error = derr.Error()
	}
	raw := in.Bytes()
	covered := 0
	for _, s := range in.Fields() {
		if s.Len <= 0 || s.Off < covered || s.Off+s.Len > len(raw) || (derr != nil && s.Class != "word") {
			continue // a field the decoder did not place: leave it out of the picture
		}
		f := render.Field{Name: s.Name, Class: s.Class, Off: s.Off, Text: s.Text}
		for _, b := range raw[s.Off : s.Off+s.Len] {
			f.Bytes = append(f.Bytes, fmt.Sprintf("%02x", b))
		}
		covered = s.Off + s.Len
		ri.Fields = append(ri.Fields, f)
	}
	if covered < len(raw) {
		f := render.Field{Name: "bytes", Class: "prefix", Off: covered}
		for _, b := range raw[covered:] {
			f.Bytes = append(f.Bytes, fmt.Sprintf("%02x", b))
		}
		ri.Fields = append(ri.Fields, f)
	}
	return ri
}

// slotPicture draws a slot image: the copy (with the rebased displacement of
// a RIP-relative instruction), then the jump back or the trap. notes are the
// sim's notes by offset (nil for explain).
func slotPicture(in *decode.Inst, slot []byte, slotAddr uint64, notes map[int]string) *render.Slot {
	s := &render.Slot{Addr: fmt.Sprintf("%#x", slotAddr), Addr0: fmt.Sprintf("%#x", in.Addr), InsnLen: in.Len,
		Resume: fmt.Sprintf("%#x", in.End()), JumpOff: -1, TrapOff: -1, FixupFirst: -1}
	if in.RIPRel && in.DispLen > 0 {
		s.FixupFirst, s.FixupLen = in.DispOff, in.DispLen
	}
	for _, b := range in.Bytes() {
		s.Code = append(s.Code, fmt.Sprintf("%02x", b))
	}
	kinds := make([]string, len(slot))
	for off := 0; off < len(slot); {
		var si decode.Inst
		err := decode.DecodeInto(&si, slot[off:], in.Mode, slotAddr+uint64(off))
		n := max(si.Len, 1)
		if err != nil {
			n = len(slot) - off
		}
		n = min(n, len(slot)-off)
		line := render.SlotLine{Off: off, Bytes: string(appendHexBytes(nil, slot[off:off+n])), Asm: "(bad)", Note: notes[off]}
		if err == nil {
			line.Asm = decode.Format(&si, nil)
		}
		kind := "copy"
		switch {
		case off < in.Len:
			if off == 0 && s.FixupFirst >= 0 && err == nil && si.RIPRel {
				s.FixupNote = fmt.Sprintf("%#x -> %#x, same target %#x", in.Disp, si.Disp, in.End()+uint64(in.Disp))
				if line.Note == "" {
					line.Note = "RIP-relative displacement rebased " + s.FixupNote
				}
			}
		case err == nil && si.Branch.Relative() && si.Target == in.End(), strings.Contains(line.Note, "ldr pc"):
			kind = "jmp"
			if s.JumpOff < 0 {
				s.JumpOff = off
			}
		case strings.Contains(line.Note, "addr+len = "):
			kind = "tail"
		case strings.Contains(line.Note, "back to the"):
			// ARM: mov pc, lr / bx lr returns to the emulate_* handler
			kind = "ret"
			if s.TrapOff < 0 {
				s.TrapOff, s.TrapRet = off, true
			}
		default:
			kind = "int3"
			if s.TrapOff < 0 {
				s.TrapOff = off
			}
		}
		for i := off; i < off+n; i++ {
			kinds[i] = kind
		}
		s.Lines = append(s.Lines, line)
		off += n
	}
	for i, b := range slot {
		k := kinds[i]
		if k == "copy" && s.FixupFirst >= 0 && i >= s.FixupFirst && i < s.FixupFirst+s.FixupLen {
			k = "fixup"
		}
		s.Bytes = append(s.Bytes, render.SlotByte{Off: i, Hex: fmt.Sprintf("%02x", b), Kind: k})
	}
	if s.FixupNote == "" {
		s.FixupFirst = -1
	}
	return s
}

func explainPicture(arch *decode.Arch, pol *boost.Policy, env *boost.Env, in *decode.Inst, derr error, steps []boost.Step, d *boost.Decision) *render.ExplainPage {
	p := &render.ExplainPage{Title: "kboost explain: " + asmOf(in, derr), Arch: arch.Name, Policy: pol.Name,
		Config: strings.Join(env.Config.Flags(), " "), Inst: instPicture(in, derr), FieldTab: fieldList(in),
		Verdict: verdictClass(d)}
	if d.Verdict == boost.Reject {
		p.Errno = d.Errno.String()
	}
	for _, st := range steps {
		p.Rules = append(p.Rules, render.Rule{ID: st.Rule, Outcome: st.Outcome.String(), Text: st.Text})
	}
	if sb := d.SlotBytes(); len(sb) > 0 {
		p.Slot = slotPicture(in, sb, env.SlotAddr, nil)
	}
	return p
}

func writeExplainPicture(out io.Writer, p *render.ExplainPage, format string) error {
	return writePicture(out, format, func(w io.Writer) error { return render.InstSVG(w, p) },
		func(w io.Writer) error { return render.ExplainHTML(w, p) })
}

// writePicture writes the svg or the html drawing of a page, buffered.
func writePicture(out io.Writer, format string, svg, html func(io.Writer) error) error {
	w := bufio.NewWriter(out)
	draw := html
	if format == "svg" {
		draw = svg
	}
	if err := draw(w); err != nil {
		return err
	}
	return w.Flush()
}

// hitTrap names the breakpoint each architecture's kprobes write.
var hitTrap = map[string]string{
	"x86-64": "int3 (0xcc)", "i386": "int3 (0xcc)", "arm64": "BRK #0x004 (KPROBES_BRK_IMM)",
	"arm": "the undefined instruction 0xe7f001f8 (KPROBE_ARM_BREAKPOINT)", "thumb": "the undefined instruction 0xde18 (KPROBE_THUMB16_BREAKPOINT)",
}

// hitSteps is what happens at a hit on each path, numbered by the template.
func hitSteps(arch, path, addr, slot, resume string) []string {
	trap := hitTrap[arch]
	if trap == "" {
		trap = "the breakpoint"
	}
	s := []string{
		fmt.Sprintf("register_kprobe writes %s over the first bytes at %s (the original bytes are kept in the probe)", trap, addr),
		fmt.Sprintf("the CPU reaches %s and executes the breakpoint: a trap into the kernel", addr),
		"the kprobe trap handler finds the probe by address and runs its pre_handler",
	}
	switch path {
	case "boost":
		s = append(s, fmt.Sprintf("the handler sets the IP to the slot at %s: the copied instruction runs there, with no second trap (boosted)", slot),
			fmt.Sprintf("the jump after the copy goes back to addr+len = %s; execution continues", resume))
	case "single-step":
		s = append(s, fmt.Sprintf("the handler sets the IP to the slot at %s: the copied instruction runs out of line", slot),
			"the trap after the copy (or the return to the handler) enters the kernel again: post_handler, fix-ups",
			fmt.Sprintf("the handler sets the IP to addr+len = %s (or to the branch target the copy computed) and returns", resume))
	case "emulate":
		s = append(s, "the handler emulates the instruction: it updates the registers, memory and IP the way the instruction would; no slot runs",
			"the trap returns to the emulated next IP")
	default:
		s = append(s[:1], "the probe was refused at registration: nothing is written, no hit happens")
	}
	return s
}

func simPicture(rep *kernelsim.SimReport) *render.SimPage {
	p := &render.SimPage{Path: rep.Path, Forced: rep.Forced, Sandbox: rep.Sandbox, Lazy: rep.Lazy, Conclusion: rep.Conclusion}
	mode, _ := decode.ParseMode(rep.Arch)
	code, _ := jsonv.ParseHex(rep.Bytes)
	addr, _ := parseAddr(rep.Addr)
	slotAddr, _ := parseAddr(rep.SlotAddr)
	var in decode.Inst
	derr := decode.DecodeInto(&in, code, mode, addr)
	e := &p.ExplainPage
	e.Title = "kboost sim: " + rep.Asm
	e.Arch, e.Policy, e.Config = rep.Arch, rep.Policy, rep.Config
	e.Inst = instPicture(&in, derr)
	e.FieldTab = fieldList(&in)
	e.Verdict, e.Errno = rep.Verdict, rep.Errno
	for _, r := range rep.Reasons {
		e.Rules = append(e.Rules, render.Rule{ID: r, Outcome: "reason", Text: ruleText(r)})
	}
	switch {
	case rep.RangeError != "":
		e.Slot = &render.Slot{Refused: rep.RangeError}
	case rep.SlotHex != "":
		slot, _ := jsonv.ParseHex(rep.SlotHex)
		notes := map[int]string{}
		for _, l := range rep.Slot {
			notes[l.Off] = l.Note
		}
		e.Slot = slotPicture(&in, slot, slotAddr, notes)
		e.Slot.Problems = rep.Problems
	}
	p.HitSteps = hitSteps(rep.Arch, rep.Path, rep.Addr, rep.SlotAddr, fmt.Sprintf("%#x", in.End()))
	for i, t := range rep.Trials {
		tr := render.Trial{Title: fmt.Sprintf("state %d", i+1), Verdict: t.Verdict, HitPath: t.HitPath}
		if t.Hit > 0 {
			tr.Title = fmt.Sprintf("hit %d (%s), state %d", t.Hit, t.HitPath, i%max(len(rep.Trials)/3, 1)+1)
		}
		diff := map[string]bool{}
		for _, f := range t.Diverged {
			diff[f] = true
		}
		add := func(n, b0, x, b1, y string) {
			tr.Rows = append(tr.Rows, render.RegRow{Name: n, Before: b0, InPlace: x, HitBefore: b1, Hit: y, Differs: diff[n],
				EntryDiffers: b0 != b1, Changed: b0 != "" && b0 != x, HitChanged: b1 != "" && b1 != y})
		}
		add("outcome", "", t.InPlace.Outcome, "", t.Sim.Outcome)
		if t.InPlace.Fault != "" || t.Sim.Fault != "" {
			add("fault", "", t.InPlace.Fault, "", t.Sim.Fault)
		}
		add("pc", hexAddr(t.RefEntry.PC), t.InPlace.PC, hexAddr(t.HitEntry.PC), t.Sim.PC)
		for i, n := range t.RegNames {
			add(n, hexAddr(t.RefEntry.GPR[i]), t.InPlace.Regs[n], hexAddr(t.HitEntry.GPR[i]), t.Sim.Regs[n])
		}
		add("flags", hexAddr(t.RefEntry.Flags), t.InPlace.Flags, hexAddr(t.HitEntry.Flags), t.Sim.Flags)
		for _, f := range t.Diverged {
			if strings.HasPrefix(f, "stack") || strings.HasPrefix(f, "scratch") || strings.HasPrefix(f, "fault") {
				tr.Extra = append(tr.Extra, f+" differs"+memWords(f, &t.RefResult, &t.HitResult))
			}
		}
		p.Trials = append(p.Trials, tr)
	}
	return p
}

func writeSimPicture(out io.Writer, rep *kernelsim.SimReport, format string) error {
	p := simPicture(rep)
	return writePicture(out, format, func(w io.Writer) error { return render.InstSVG(w, &p.ExplainPage) },
		func(w io.Writer) error { return render.SimHTML(w, p) })
}

// auditReport collects `kboost audit --format html`: each worker encodes its
// functions as JSON lines (in request order), the writer adds them to the
// report builder.
type auditReport struct {
	b   render.ReportBuilder
	asm bool
}

func newAuditReport(f *kimage.File, policy, config string, notes []string, nfuncs int) *auditReport {
	r := &auditReport{asm: nfuncs <= 4000}
	r.b = render.ReportBuilder{File: f.Path, Arch: f.Arch.Name, Policy: policy, Config: config, Notes: notes, AsmLimit: 1 << 20, RuleDesc: ruleText}
	groupBySource(&r.b, f)
	if !r.asm {
		r.b.Notes = append(r.b.Notes, fmt.Sprintf("%d functions: the listings hold no disassembly", nfuncs))
	}
	return r
}

// groupBySource makes the report's subsystems the functions' source
// directories where the file has DWARF line tables (Go binaries, -g builds);
// else they stay symbol prefixes (Debian's kernels), and the page says why.
func groupBySource(b *render.ReportBuilder, f *kimage.File) {
	sd, err := f.SourceDirs()
	if err != nil {
		b.GroupBy = "symbol prefix"
		b.GroupNote = "By symbol prefix: " + err.Error() + "."
		return
	}
	b.GroupBy = "source directory, from the DWARF line tables"
	b.GroupNote = fmt.Sprintf("By the directory of the source file the DWARF line table gives for each function's first instruction (as addr2line says; relative to the build directory where the file records it; %d directories). Functions the tables do not cover are under %s.", sd.Len(), render.NoGroup)
	b.Group = func(addr uint64) (string, bool) {
		_, rel, ok := sd.Lookup(addr)
		return rel, ok
	}
}

// record encodes a function (entries nil: one requested point).
func (r *auditReport) record(buf []byte, a *boost.FuncAudit, fm *decode.Formatter, point *boost.Entry, pd *boost.Decision) []byte {
	rec := render.FuncRec{Name: a.Func.Name, Addr: a.Func.Addr, Size: a.Func.Size}
	add := func(e *boost.Entry, d *boost.Decision) {
		n := 0
		if e != nil {
			n = e.Len
		}
		rec.Lens = append(rec.Lens, n)
		rec.Letters += boost.VerdictLetter(d.Verdict)
		id := ""
		if k := len(d.Reasons); k > 0 {
			id = d.Reasons[k-1].Rule
		}
		rec.Rules = append(rec.Rules, id)
		if r.asm {
			t := "(not an instruction boundary)"
			if e != nil && e.DecodeOK {
				t = fm.Format(&e.Inst)
			} else if e != nil {
				t = "(bad)"
			}
			rec.Asm = append(rec.Asm, t)
		}
	}
	if pd != nil {
		add(point, pd)
	} else {
		for i := range a.Entries {
			add(&a.Entries[i], &a.Entries[i].Decision)
		}
	}
	return render.AppendFuncRec(buf, &rec)
}

func (r *auditReport) errRecord(buf []byte, name string, err error) []byte {
	return render.AppendFuncRec(buf, &render.FuncRec{Name: name, Err: err.Error()})
}

func (r *auditReport) write(b []byte) error {
	return render.ReadFuncRecs(b, r.b.Add)
}

func (r *auditReport) finish(w io.Writer, s *summary) error {
	sum := render.AuditSummary{Functions: s.funcs, Boundaries: s.points, Optimizable: s.optimizable, Errors: s.errors}
	for _, k := range sortedKeys(s.verdicts) {
		sum.Verdicts = append(sum.Verdicts, render.Count{Name: k, N: s.verdicts[k], Pct: fmt.Sprintf("%.1f%%", 100*float64(s.verdicts[k])/float64(max(s.points, 1)))})
	}
	for _, k := range sortedKeys(s.errnos) {
		sum.Errnos = append(sum.Errnos, render.Count{Name: k, N: s.errnos[k]})
	}
	for _, k := range sortedKeys(s.rules) {
		sum.Rules = append(sum.Rules, render.Count{Name: k, N: s.rules[k]})
	}
	return render.AuditHTML(w, &r.b, &sum)
}
