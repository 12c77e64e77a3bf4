package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
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
	var archName, policy, mapName string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "opcodes",
		Short: "The opcode map as a 16x16 grid per map, each cell's verdict under a policy",
		Long: `Draw each opcode map as a 16x16 grid (row = high nibble, column = low nibble)
with the policy's verdict for the plain form of each opcode (no prefixes, register
ModRM, preemption off so boostability shows):

  B boost   S singlestep   E emulate   X reject   P prefix/escape   . invalid
  g group opcode whose verdict depends on ModRM.reg (listed below the grid)`,
		Example: "  kboost opcodes\n  kboost opcodes --map 0f --policy linux-6.9\n  kboost opcodes --arch i386 --policy linux-2.6.17-i386 --map one",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			arch, err := decode.LookupArch(archName)
			if err != nil {
				return &UsageError{err.Error()}
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
							jc.Reasons = ruleIDs(c.Decision.Reasons)
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
	fl.StringVar(&archName, "arch", "x86-64", "x86-64 or i386")
	fl.StringVar(&policy, "policy", "", "kernel policy (default linux-6.1)")
	fl.StringVar(&mapName, "map", "", "only this map: one, 0f, 0f38, 0f3a")
	fl.BoolVar(&jsonOut, "json", false, "machine-readable output")
	return cmd
}
