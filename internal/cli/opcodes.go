package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/opcodes"
	"github.com/spf13/cobra"
)

var gridMaps = map[string]decode.Map{"one": decode.MapOne, "0f": decode.Map0F, "0f38": decode.Map0F38, "0f3a": decode.Map0F3A}

// cellCode is the one-letter code a grid cell shows.
func cellCode(c *boost.Cell) string {
	switch c.Kind {
	case "prefix":
		return "P"
	case "invalid":
		return "."
	}
	code := func(d *boost.Decision) string {
		switch d.Verdict {
		case boost.Boost:
			return "B"
		case boost.SingleStep:
			return "S"
		case boost.Emulate:
			return "E"
		case boost.Ftrace:
			return "F"
		}
		return "X"
	}
	if !c.Group {
		return code(&c.Decision)
	}
	seen := map[string]bool{}
	for r := 0; r < 8; r++ {
		if c.RegOK[r] {
			seen[code(&c.Reg[r])] = true
		}
	}
	if len(seen) == 1 {
		for k := range seen {
			return k
		}
	}
	return "g"
}

func newOpcodesCmd(s Streams) *cobra.Command {
	var archName, policy, mapName, className, format, diff string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "opcodes",
		Short: "The opcode map as a 16x16 grid per map, each cell's verdict under a policy",
		Long: `Draw each opcode map as a 16x16 grid (row = high nibble, column = low nibble)
with the policy's verdict for the plain form of each opcode (no prefixes, register
ModRM, preemption off so boostability shows):

  B boost   S singlestep   E emulate   X reject   P prefix/escape   . invalid
  g group opcode whose verdict depends on ModRM.reg (listed below the grid)

With --arch arm64 it draws the A64 encoding space instead: rows are op0 (bits
28..25, the Arm ARM's top-level decode), columns bits 31..29 and 24..23 (--arch
arm: A32 op0, bits 27..25, conditional or not, by bits 24..20; --arch thumb:
T16 by bits 15..12 and T32 by op1, bits 28..27 of hw1:hw2); each
cell summarizes the verdicts of the encodings (opcodes/spec/arm64.spec, arm.spec, thumb.spec) with
words in it, each encoding classified on sample words. --class lists the
encodings of one class with their verdict and deciding rule.`,
		Example: "  kboost opcodes\n  kboost opcodes --map 0f --policy linux-6.12\n  kboost opcodes --arch i386 --policy linux-2.6.17-i386 --map one\n  kboost opcodes --arch arm64 --policy boost-arm64\n  kboost opcodes --arch arm64 --class branch\n  kboost opcodes --arch arm",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			arch, err := decode.LookupArch(archName)
			if err != nil {
				return &UsageError{err.Error()}
			}
			if err := checkFormat(format, jsonOut, "text", "svg", "html"); err != nil {
				return err
			}
			if format != "text" || diff != "" {
				if format == "text" || className != "" {
					return usagef("--diff draws a picture (add --format html or svg); --class is text only")
				}
				return runOpcodesPicture(s.Out, arch, policy, diff, mapName, format)
			}
			if l := armGridLayouts[arch]; l != nil {
				if mapName != "" {
					return usagef("--map is for x86 opcode maps; for %s use --class (one of %s)", arch.Name, strings.Join(a64ClassNames(), ", "))
				}
				return runOpcodesArm(s, arch, l, policy, className, jsonOut)
			}
			if className != "" {
				return usagef("--class is for --arch arm64, arm or thumb (x86: use --map)")
			}
			pol, err := pickPolicy(policy, arch)
			if err != nil {
				return err
			}
			names := []string{"one", "0f", "0f38", "0f3a"}
			if mapName != "" {
				if _, ok := gridMaps[mapName]; !ok {
					return usagef("--map %q: want one of one, 0f, 0f38, 0f3a", mapName)
				}
				names = []string{mapName}
			}
			w := bufio.NewWriter(s.Out)
			defer w.Flush()
			if jsonOut {
				type cell struct {
					Opcode   string            `json:"opcode"`
					Kind     string            `json:"kind"`
					Mnemonic string            `json:"mnemonic,omitempty"`
					Verdict  string            `json:"verdict,omitempty"`
					Errno    string            `json:"errno,omitempty"`
					Reasons  []string          `json:"reasons,omitempty"`
					Details  []string          `json:"details,omitempty"`
					Group    map[string]string `json:"group,omitempty"`
				}
				out := map[string][]cell{}
				for _, n := range names {
					grid := pol.OpcodeGrid(gridMaps[n], arch.Mode)
					for i := range grid {
						c := &grid[i]
						jc := cell{Opcode: fmt.Sprintf("%02x", c.Opcode), Kind: c.Kind, Mnemonic: c.Mnemonic}
						if c.Kind == "op" {
							jc.Verdict = c.Decision.Verdict.String()
							if c.Decision.Verdict == boost.Reject {
								jc.Errno = c.Decision.Errno.String()
							}
							jc.Reasons, jc.Details = ruleIDs(c.Decision.Reasons), c.Decision.ReasonTexts()
						}
						if c.Group {
							jc.Group = map[string]string{}
							for r := 0; r < 8; r++ {
								if c.RegOK[r] {
									jc.Group[fmt.Sprintf("/%d", r)] = c.Reg[r].Verdict.String()
								}
							}
						}
						out[n] = append(out[n], jc)
					}
				}
				enc := json.NewEncoder(w)
				return enc.Encode(map[string]any{"arch": arch.Name, "policy": pol.Name, "maps": out})
			}
			fmt.Fprintf(w, "policy %s, %s (B boost, S singlestep, E emulate, X reject, P prefix, . invalid, g by /reg)\n", pol.Name, arch.Name)
			for _, n := range names {
				grid := pol.OpcodeGrid(gridMaps[n], arch.Mode)
				fmt.Fprintf(w, "\nmap %s\n     ", n)
				for c := 0; c < 16; c++ {
					fmt.Fprintf(w, " %x", c)
				}
				fmt.Fprintln(w)
				var groups []string
				for r := 0; r < 16; r++ {
					fmt.Fprintf(w, "  %x_ ", r)
					for c := 0; c < 16; c++ {
						cell := &grid[r*16+c]
						code := cellCode(cell)
						fmt.Fprintf(w, " %s", code)
						if code == "g" {
							var parts []string
							for g := 0; g < 8; g++ {
								if cell.RegOK[g] {
									parts = append(parts, fmt.Sprintf("/%d %s %s", g, cell.RegMne[g], cell.Reg[g].Verdict))
								}
							}
							groups = append(groups, fmt.Sprintf("  %02x: %s", cell.Opcode, strings.Join(parts, ", ")))
						}
					}
					fmt.Fprintln(w)
				}
				for _, g := range groups {
					fmt.Fprintln(w, g)
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&archName, "arch", "x86-64", "x86-64, i386, arm64, arm or thumb")
	fl.StringVar(&policy, "policy", "", policyUsage)
	fl.StringVar(&className, "class", "", "arm64, arm, thumb: list the encodings of one class (branch, exception, system, loadstore, dpimm, dpreg, fpsimd, sve, sme)")
	fl.StringVar(&mapName, "map", "", "only this map: one, 0f, 0f38, 0f3a")
	fl.BoolVar(&jsonOut, "json", false, "machine-readable output")
	addFormatFlag(fl, &format, "text, svg (the grids) or html (a page with the grids and their tables)", "text", "svg", "html")
	fl.StringVar(&diff, "diff", "", "with --format svg|html: compare two policies, P1,P2 (each cell split; a thick border marks a different verdict)")
	return cmd
}

// armGridLayouts are the ARM instruction sets drawn as encoding spaces, with
// their default policies.
var armGridLayouts = map[*decode.Arch]*boost.ArmGridLayout{
	decode.ARM64: boost.A64GridLayout,
	decode.ARM:   boost.A32GridLayout,
	decode.Thumb: boost.ThumbGridLayout,
}

// runOpcodesArm draws an ARM encoding space (--arch arm64, arm, thumb).
func runOpcodesArm(s Streams, arch *decode.Arch, l *boost.ArmGridLayout, policy, className string, jsonOut bool) error {
	pol, err := pickPolicy(policy, arch)
	if err != nil {
		return err
	}
	class := opcodes.NumArmClasses
	if className != "" {
		c, ok := opcodes.ParseArmClass(className)
		if !ok || c == opcodes.ArmUnallocated {
			return usagef("--class %q: want one of %s", className, strings.Join(a64ClassNames(), ", "))
		}
		class = c
	}
	g := pol.ArmGrid(l)
	w := bufio.NewWriter(s.Out)
	defer w.Flush()
	if jsonOut {
		return json.NewEncoder(w).Encode(a64GridJSON(g, arch, class))
	}
	if class != opcodes.NumArmClasses {
		writeA64Class(w, g, class)
		return nil
	}
	fmt.Fprintf(w, "policy %s, %s: the encoding space, probes at %#x\n", pol.Name, arch.Name, g.Addr)
	fmt.Fprintln(w, "B boost, S singlestep, E emulate, X reject, . no allocated encoding; lower case:")
	fmt.Fprintln(w, "the cell's encodings differ, the letter is the most frequent verdict.")
	fmt.Fprintf(w, "Rows: %s.\nColumns: bits %s, then bits %s.\n", l.RowBits, l.ColHi, l.ColLo)
	fmt.Fprintln(w)
	lw := max(12, len("bits "+l.ColHi))
	for _, r := range l.RowLabels {
		lw = max(lw, len(r))
	}
	lw++
	fmt.Fprintf(w, "%-*s", lw, "bits "+l.ColHi)
	for hi := 0; hi < 8; hi++ {
		fmt.Fprintf(w, " %03b", hi)
		if hi < 7 {
			fmt.Fprint(w, " ")
		}
	}
	fmt.Fprintf(w, "\n%*s ", lw-1, l.ColLo)
	for hi := 0; hi < 8; hi++ {
		fmt.Fprint(w, " 0123")
	}
	fmt.Fprintln(w)
	for r := 0; r < l.Rows; r++ {
		fmt.Fprintf(w, "%-*s", lw, l.RowLabels[r])
		for c := 0; c < l.Cols; c++ {
			if c%4 == 0 {
				fmt.Fprint(w, " ")
			}
			fmt.Fprint(w, g.Cells[r][c].Code())
		}
		fmt.Fprintf(w, "  %s\n", l.RowNames[r])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-12s %9s %7s %11s %8s %7s %6s\n", "class", "encodings", "boost", "singlestep", "emulate", "reject", "mixed")
	var tot [5]int
	var totEnc, totMixed int
	for i := range g.Classes {
		cs := &g.Classes[i]
		if len(cs.Encs) == 0 {
			continue
		}
		fmt.Fprintf(w, "%-12s %9d %7d %11d %8d %7d %6d\n", cs.Class, len(cs.Encs),
			cs.Count[boost.Boost], cs.Count[boost.SingleStep], cs.Count[boost.Emulate], cs.Count[boost.Reject], cs.Mixed)
		for v := range tot {
			tot[v] += cs.Count[v]
		}
		totEnc += len(cs.Encs)
		totMixed += cs.Mixed
	}
	fmt.Fprintf(w, "%-12s %9d %7d %11d %8d %7d %6d\n", "all", totEnc,
		tot[boost.Boost], tot[boost.SingleStep], tot[boost.Emulate], tot[boost.Reject], totMixed)
	fmt.Fprintln(w, "\nEach encoding counts under the verdict of most of its sample words; 'kboost opcodes")
	fmt.Fprintf(w, "--arch %s --class NAME' lists the encodings of a class with their deciding rules.\n", arch.Name)
	return nil
}

func a64ClassNames() []string {
	var n []string
	for c := opcodes.ArmClass(1); c < opcodes.NumArmClasses; c++ {
		n = append(n, c.String())
	}
	return n
}

// a64Pattern writes an encoding's fixed bits as 0/1 and its free bits as x,
// bit 31 first, in bytes.
func a64Pattern(op *opcodes.ArmOp) string {
	var b strings.Builder
	for i := 31; i >= 0; i-- {
		switch {
		case op.Mask>>i&1 == 0:
			b.WriteByte('x')
		case op.Value>>i&1 == 1:
			b.WriteByte('1')
		default:
			b.WriteByte('0')
		}
		if i%8 == 0 && i > 0 {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// a64Rule is the rule that decided e's verdict.
func a64Rule(e *boost.ArmGridEnc) string {
	if n := len(e.Decision.Reasons); n > 0 {
		return e.Decision.Reasons[n-1].Rule
	}
	return ""
}

// a64VerdictText is the verdict with its errno, and the split when mixed.
func a64VerdictText(e *boost.ArmGridEnc) string {
	t := e.Verdict.String()
	if e.Verdict == boost.Reject {
		t += " " + e.Decision.Errno.String()
	}
	if e.Mixed {
		t += "*"
	}
	return t
}

func writeA64Class(w *bufio.Writer, g *boost.ArmGrid, class opcodes.ArmClass) {
	cs := &g.Classes[class]
	fmt.Fprintf(w, "policy %s, %s class %s: %d encodings\n", g.Policy.Name, g.Layout.Name, class, len(cs.Encs))
	fmt.Fprintf(w, "boost %d, singlestep %d, emulate %d, reject %d (by the verdict of most sample words)\n", cs.Count[boost.Boost], cs.Count[boost.SingleStep], cs.Count[boost.Emulate], cs.Count[boost.Reject])
	fmt.Fprintln(w, "pattern: bit 31 first, x = operand bit; * = verdict depends on operands (most frequent shown)")
	fmt.Fprintf(w, "\n%-10s %-35s %-16s %s\n", "mnemonic", "pattern", "verdict", "deciding rule")
	for _, i := range cs.Encs {
		e := &g.Encs[i]
		name := e.Op.Name
		if e.Op.Flags&opcodes.ArmGroup != 0 {
			name += "..."
		}
		fmt.Fprintf(w, "%-10s %-35s %-16s %s\n", name, a64Pattern(e.Op), a64VerdictText(e), a64Rule(e))
	}
}

type a64EncJSON struct {
	Mnemonic string         `json:"mnemonic"`
	Class    string         `json:"class"`
	Mask     string         `json:"mask"`
	Value    string         `json:"value"`
	Group    bool           `json:"group,omitempty"`
	SpecLine int            `json:"spec_line"`
	Verdict  string         `json:"verdict"`
	Errno    string         `json:"errno,omitempty"`
	Mixed    bool           `json:"mixed,omitempty"`
	Counts   map[string]int `json:"counts"`
	Word     string         `json:"word"`
	Reasons  []string       `json:"reasons"`
	Details  []string       `json:"details"`
}

type a64CellJSON struct {
	Cols      string         `json:"col"`
	Code      string         `json:"code"`
	Counts    map[string]int `json:"counts,omitempty"`
	Undefined bool           `json:"undefined,omitempty"`
}

type a64RowJSON struct {
	Op0   string        `json:"row"`
	Name  string        `json:"name"`
	Cells []a64CellJSON `json:"cells"`
}

func a64Counts(c *[5]int) map[string]int {
	m := map[string]int{}
	for v, n := range c {
		if n > 0 {
			m[boost.Verdict(v).String()] = n
		}
	}
	return m
}

func a64GridJSON(g *boost.ArmGrid, arch *decode.Arch, class opcodes.ArmClass) map[string]any {
	out := map[string]any{"arch": arch.Name, "policy": g.Policy.Name, "addr": fmt.Sprintf("%#x", g.Addr)}
	var encs []a64EncJSON
	for i := range g.Encs {
		e := &g.Encs[i]
		if e.Words == 0 || class != opcodes.NumArmClasses && e.Op.Class != class {
			continue
		}
		je := a64EncJSON{Mnemonic: e.Op.Name, Class: e.Op.Class.String(), Mask: fmt.Sprintf("%08x", e.Op.Mask),
			Value: fmt.Sprintf("%08x", e.Op.Value), Group: e.Op.Flags&opcodes.ArmGroup != 0, SpecLine: e.Op.Line,
			Verdict: e.Verdict.String(), Mixed: e.Mixed, Counts: a64Counts(&e.Count),
			Word: fmt.Sprintf("%08x", e.Word), Reasons: ruleIDs(e.Decision.Reasons), Details: e.Decision.ReasonTexts()}
		if e.Verdict == boost.Reject {
			je.Errno = e.Decision.Errno.String()
		}
		encs = append(encs, je)
	}
	out["encodings"] = encs
	if class != opcodes.NumArmClasses {
		out["class"] = class.String()
		return out
	}
	var rows []a64RowJSON
	l := g.Layout
	out["rows_by"], out["cols_by"] = l.RowBits, "bits "+l.ColHi+", "+l.ColLo
	for r := 0; r < l.Rows; r++ {
		row := a64RowJSON{Op0: l.RowLabels[r], Name: l.RowNames[r]}
		for c := 0; c < l.Cols; c++ {
			cell := &g.Cells[r][c]
			jc := a64CellJSON{Cols: fmt.Sprintf("%03b %02b", c>>2, c&3), Code: cell.Code(), Undefined: cell.Undefined}
			if cnt := a64Counts(&cell.Count); len(cnt) > 0 {
				jc.Counts = cnt
			}
			row.Cells = append(row.Cells, jc)
		}
		rows = append(rows, row)
	}
	out["rows"] = rows
	classes := map[string]map[string]int{}
	for i := range g.Classes {
		cs := &g.Classes[i]
		if len(cs.Encs) > 0 {
			m := a64Counts(&cs.Count)
			m["encodings"] = len(cs.Encs)
			m["mixed"] = cs.Mixed
			classes[cs.Class.String()] = m
		}
	}
	out["classes"] = classes
	return out
}
