package cli

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
	_ "github.com/kboost/kboost/kernelsim/gdbserial" // registers the ARM backends kernelsim.Simulate runs on
	_ "github.com/kboost/kboost/kernelsim/native"    // registers the x86 CPU backend
	"github.com/spf13/cobra"
)

func newSimCmd(s Streams) *cobra.Command {
	var (
		archName, policyName, addrStr, slotStr, force string
		format                                        string
		itCond, execName                              string
		trials, show                                  int
		seed                                          uint64
		jsonOut, color, words                         bool
		preempt                                       ynFlag
		sets                                          []string
	)
	cmd := &cobra.Command{
		Use:   "sim HEX",
		Short: "Build the kprobe slot for an instruction and check the hit on the CPU",
		Long: `Model a kprobe on one instruction the way the policy's kernel does it (with
CONFIG_PREEMPTION off, so boosting is possible; --preemption y models Debian's
kernels, which never boost): the slot bytes with their
disassembly (the copy with its RIP-relative displacement rebased, then jmp back to
addr+len or int3), where the jump back goes, and a check of the layout. Then run
the instruction on the CPU in place and through the simulated hit (boosted slot,
slot + int3 with the IP fixup, or the kernel's emulation) from several random
register states, show both final states side by side with the differing
registers marked, and say whether the verdict is confirmed or refuted.

--path boost|single-step|emulate simulates another hit path than the policy's
("what if this were boosted?"). The linux-2.6.17-i386 policy replays the lazy
booster: the first hit single-steps and writes the jmp, later hits run direct.

--arch arm64 takes the instruction's 4 bytes in memory order (policies
linux-6.1-arm64, the default there, and boost-arm64) and runs it under
qemu-aarch64-static through its gdb stub. --arch arm (policy linux-6.1-arm)
takes an A32 word in memory order and runs it under qemu-arm-static: the
kernel's slot (the renamed instruction, mov pc, lr) called with its emulate_*
handler's register set-up and write-back, or its simulation; --path boost
runs the word verbatim from a slot with no PC fix-up. --arch thumb (policy
linux-6.1-thumb) takes a Thumb instruction as 'kboost decode --arch thumb' does
(2 bytes, or 4 when the first halfword is 0xe800 or above, little-endian
halfwords) and runs it in Thumb state: the kernel's slot [insn, bx lr] called
the way its t16/t32_emulate_* handler does, or its simulation; --addr's bit 1
places it at either halfword of a word, and --it COND makes it the last
instruction of an IT block, as the kernel's thumb_check_cc sees it.

--trials N states (default 4; up to 1e9, and 1e6-style values are taken) run
in batches of 256, so memory stays bounded whatever N. The report shows the
first --show states (default 8) in full, then up to --show more states that
diverge, and counts every state: how many matched, diverged (with the
registers and memory words that differed, and how often), were not
verifiable or inconclusive; --json reports the same (shown_states: the states
shown; states: the counts). Runs longer than a few seconds print their
progress on stderr. Ctrl-C stops the run and reports the states checked so
far (exit status 130). A REFUTED verdict exits with status 1.`,
		Example: `  kboost sim 48 8b 05 10 00 00 00
  kboost sim --path boost e8 00 00 00 00
  kboost sim --arch i386 --policy linux-2.6.17-i386 89 c8
  kboost sim --arch arm64 --policy boost-arm64 20 00 02 8b
  kboost sim --arch thumb --it eq 88 18`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			arch, err := decode.LookupArch(archName)
			if err != nil {
				return usagef("--arch: %v", err)
			}
			if err := checkFormat(format, jsonOut, "text", "svg", "html"); err != nil {
				return err
			}
			if itCond != "" && !arch.ITBlocks {
				return usagef("--it is for --arch thumb")
			}
			pol, err := pickPolicy(policyName, arch)
			if err != nil {
				return err
			}
			code, err := hexArgs(arch, args, words, false)
			if err != nil {
				return err
			}
			addr, err := archAddr(cmd, "addr", addrStr, arch.TextAddr)
			if err != nil {
				return err
			}
			slot, err := archAddr(cmd, "slot", slotStr, arch.SlotAddr)
			if err != nil {
				return err
			}
			if !arch.Fits(addr) || !arch.Fits(slot) {
				return usagef("--addr and --slot must be 32-bit addresses for %s (e.g. --addr %#x --slot %#x)", arch.Name, arch.TextAddr, arch.SlotAddr)
			}
			var fp kernelsim.Path
			switch force {
			case "":
			case "boost":
				fp = kernelsim.PathBoost
			case "single-step", "singlestep":
				fp = kernelsim.PathSingleStep
			case "emulate":
				fp = kernelsim.PathEmulate
			default:
				return usagef("--path %q: want boost, single-step or emulate", force)
			}
			set := map[string]uint64{}
			for _, kv := range sets {
				k, v, ok := strings.Cut(kv, "=")
				x, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
				if !ok || err != nil {
					return usagef("--set %q: want REG=HEX, e.g. rcx=1 or flags=0x40", kv)
				}
				set[strings.ToLower(k)] = x
			}
			ex, err := kernelsim.ParseExecMode(execName)
			if err != nil {
				return usagef("--exec: %v", err)
			}
			if _, derr := arch.DecodeOne(code, addr); inputErr(arch, derr) != nil {
				return inputErr(arch, derr)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, err := kernelsim.Simulate(ctx, arch, code, pol, &kernelsim.SimOptions{Addr: addr, SlotAddr: slot, Preemption: preempt.set && preempt.v,
				Path: fp, Trials: trials, Show: show, Seed: seed, Set: set, IT: itCond, Backend: kernelsim.Options{Exec: ex},
				Progress: newSimProgress(s.Err, trials)})
			if err != nil {
				return simErr(err)
			}
			if format != "text" {
				return writeSimPicture(s.Out, rep, format)
			}
			if jsonOut {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				printSim(s.Out, rep, color || isTerminal(s.Out))
			}
			switch st := rep.States; {
			case st != nil && st.Interrupted:
				return interrupted("sim")
			case st != nil && st.Diverged > 0:
				return findingf("the %s hit is REFUTED on %d of %d states", rep.Path, st.Diverged, st.Total)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&archName, "arch", "x86-64", "instruction set: x86-64, i386, arm64, arm or thumb (the ARM ones run under qemu-aarch64-static / qemu-arm-static)")
	f.StringVar(&policyName, "policy", "", policyUsage)
	f.StringVar(&addrStr, "addr", "", "probe address (default, by --arch: "+archAddrs(func(a *decode.Arch) uint64 { return a.TextAddr })+")")
	f.StringVar(&slotStr, "slot", "", "slot address, in the module area (default, by --arch: "+archAddrs(func(a *decode.Arch) uint64 { return a.SlotAddr })+")")
	f.StringVar(&itCond, "it", "", "thumb: run the instruction as the last of a one-instruction IT block with this condition (eq, ne, ...)")
	addExecFlag(cmd, &execName)
	f.StringVar(&force, "path", "", "simulate this hit path instead of the policy's: boost, single-step, emulate")
	countVar(f, &trials, "trials", "", 4, 1, 1e9, "random register states, streamed in batches (1 to 1e9; e.g. 1e6)")
	countVar(f, &show, "show", "", 8, 0, 1000, "states printed in full (and at most as many more that diverge)")
	f.Uint64Var(&seed, "seed", 1, "random seed for the register states")
	f.BoolVar(&jsonOut, "json", false, "print the report as JSON")
	addWordsFlag(f, &words)
	f.StringArrayVar(&sets, "set", nil, "set a register in every state, REG=HEX (repeatable; e.g. --set rcx=1 --set flags=0x40)")
	ynVar(f, &preempt, "preemption", "CONFIG_PREEMPTION of the modelled kernel, y or n (default n, so boosting is possible; y models Debian's kernels: nothing is boosted)")
	addFormatFlag(f, &format, "text, svg (fields, slot, jump back) or html (also the hit step by step and the registers)", "text", "svg", "html")
	f.BoolVar(&color, "color", false, "highlight with ANSI colours even when stdout is not a terminal")
	return cmd
}

// simErr is a simulation error as the CLI reports it: bad input is a
// usage error (exit 2).
func simErr(err error) error {
	var ie *kernelsim.InputError
	if errors.As(err, &ie) {
		return &UsageError{ie.Msg}
	}
	return err
}

func hexAddr(v uint64) string { return fmt.Sprintf("%#x", v) }

func printSim(w io.Writer, r *kernelsim.SimReport, color bool) {
	hl := func(s string) string {
		if color {
			return "\033[1;31m" + s + "\033[0m"
		}
		return s
	}
	fmt.Fprintf(w, "probe    %s: %s   %s\n", r.Addr, r.Bytes, r.Asm)
	fmt.Fprintf(w, "policy   %s (%s): %s", r.Policy, r.Config, r.Verdict)
	if r.Errno != "" {
		fmt.Fprintf(w, " %s", r.Errno)
	}
	fmt.Fprintf(w, " [%s]\n", strings.Join(r.Reasons, ", "))
	if r.Forced {
		fmt.Fprintf(w, "forced   hit path %s\n", r.Path)
	}
	switch {
	case r.RangeError != "":
		fmt.Fprintf(w, "slot     refused: %s\n", r.RangeError)
	case len(r.Slot) > 0:
		fmt.Fprintf(w, "slot     %s (%d bytes, MAX_INSN_SIZE %d):\n", r.SlotAddr, (len(r.SlotHex)+1)/3, r.MaxInsnSize)
		for _, l := range r.Slot {
			fmt.Fprintf(w, "  +%-2d  %-24s %-36s", l.Off, l.Bytes, l.Asm)
			if l.Note != "" {
				fmt.Fprintf(w, " ; %s", l.Note)
			}
			fmt.Fprintln(w)
		}
		if len(r.Problems) == 0 {
			fmt.Fprintf(w, "layout   ok: jump back lands on addr+len, fits MAX_INSN_SIZE, no branch into the tail\n")
		}
	case r.Path == "emulate":
		fmt.Fprintf(w, "slot     none executed: the int3 handler emulates the instruction\n")
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "layout   %s\n", hl("PROBLEM: "+p))
	}
	for _, l := range r.Lazy {
		fmt.Fprintf(w, "2006     %s\n", l)
	}
	if r.Sandbox != "" {
		fmt.Fprintf(w, "sandbox  %s\n", r.Sandbox)
	}
	for _, t := range r.Trials {
		title := fmt.Sprintf("state %d", t.State)
		if t.Hit > 0 {
			title = fmt.Sprintf("hit %d (%s), state %d", t.Hit, t.HitPath, t.State)
		}
		fmt.Fprintf(w, "\n%s: %s\n", title, t.Verdict)
		fmt.Fprintf(w, "  %-7s %-22s %-22s\n", "", "in place", "kprobe hit ("+t.HitPath+")")
		diff := map[string]bool{}
		for _, f := range t.Diverged {
			diff[f] = true
		}
		row := func(name, x, y string, d bool) {
			mark := "  "
			if d {
				mark = "* "
				name, x, y = hl(fmt.Sprintf("%-7s", name)), hl(fmt.Sprintf("%-22s", x)), hl(fmt.Sprintf("%-22s", y))
			} else {
				name, x, y = fmt.Sprintf("%-7s", name), fmt.Sprintf("%-22s", x), fmt.Sprintf("%-22s", y)
			}
			fmt.Fprintf(w, "%s%s %s %s\n", mark, name, x, y)
		}
		row("outcome", t.InPlace.Outcome, t.Sim.Outcome, diff["outcome"])
		if t.InPlace.Fault != "" || t.Sim.Fault != "" {
			fmt.Fprintf(w, "          fault in place: %s\n          fault in hit:   %s\n", t.InPlace.Fault, t.Sim.Fault)
		}
		row("pc", t.InPlace.PC, t.Sim.PC, diff["pc"])
		for _, n := range t.RegNames {
			row(n, t.InPlace.Regs[n], t.Sim.Regs[n], diff[n])
		}
		row("flags", t.InPlace.Flags, t.Sim.Flags, diff["flags"])
		for _, f := range t.Diverged {
			if strings.HasPrefix(f, "stack") || strings.HasPrefix(f, "scratch") || strings.HasPrefix(f, "fault") {
				fmt.Fprintf(w, "* %s\n", hl(f+" differs"+memWords(f, &t.RefResult, &t.HitResult)))
			}
		}
	}
	if st := r.States; st != nil && st.Total > len(r.Trials) {
		printSimStates(w, st, len(r.Trials))
	}
	fmt.Fprintf(w, "\nverdict  %s\n", r.Conclusion)
}

// printSimStates counts the states of a run longer than what was shown.
func printSimStates(w io.Writer, st *kernelsim.SimStates, shown int) {
	fmt.Fprintf(w, "\nstates   %d checked, %d shown above (--show N shows more): %d matched, %d diverged, %d not verifiable, %d inconclusive\n",
		st.Total, shown, st.Equivalent, st.Diverged, st.NotVerifiable, st.Inconclusive)
	if len(st.DivergedFields) == 0 {
		return
	}
	fs := make([]string, 0, len(st.DivergedFields))
	for f := range st.DivergedFields {
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool {
		if st.DivergedFields[fs[i]] != st.DivergedFields[fs[j]] {
			return st.DivergedFields[fs[i]] > st.DivergedFields[fs[j]]
		}
		return fs[i] < fs[j]
	})
	var parts []string
	for _, f := range fs {
		parts = append(parts, fmt.Sprintf("%s %d", f, st.DivergedFields[f]))
	}
	fmt.Fprintf(w, "differed %s (states per field)\n", strings.Join(parts, ", "))
}

// simProgress prints a long sim's progress on stderr: a line updated in
// place on a terminal (after a second), else a line at 10 s and every 30 s
// after.
type simProgress struct {
	w           io.Writer
	tty         bool
	total       int
	start, last time.Time
	wroteOnTerm bool
}

func newSimProgress(w io.Writer, total int) *simProgress {
	return &simProgress{w: w, tty: isTerminal(w), total: total, start: time.Now()}
}

// SetTotal sets the number of states of the whole run (lazy boosts: every hit).
func (p *simProgress) SetTotal(n int) {
	if p != nil {
		p.total = n
	}
}

func (p *simProgress) Update(done, diverged int) {
	if p == nil {
		return
	}
	el := time.Since(p.start)
	switch {
	case p.tty && time.Since(p.last) >= 200*time.Millisecond && el >= time.Second:
		fmt.Fprintf(p.w, "\r\033[Ksim: %d of %d states (%.0f/s), %d diverged", done, p.total, float64(done)/el.Seconds(), diverged)
		p.wroteOnTerm = true
	case !p.tty && el >= 10*time.Second && time.Since(p.last) >= 30*time.Second:
		fmt.Fprintf(p.w, "sim: %s: %d of %d states (%.0f/s), %d diverged\n", el.Round(time.Second), done, p.total, float64(done)/el.Seconds(), diverged)
	default:
		return
	}
	p.last = time.Now()
}

func (p *simProgress) Finish() {
	if p != nil && p.wroteOnTerm {
		fmt.Fprint(p.w, "\r\033[K")
		p.wroteOnTerm = false
	}
}

// memWords shows the 8-byte word named by a "stack+0xNN" or "scratch+0xNN"
// field in both results.
func memWords(field string, ref, hit *kernelsim.Result) string {
	name, off, ok := strings.Cut(field, "+")
	if !ok {
		return ""
	}
	o, err := strconv.ParseUint(strings.TrimPrefix(off, "0x"), 16, 32)
	if err != nil {
		return ""
	}
	x, y := ref.Stack, hit.Stack
	if name == "scratch" {
		x, y = ref.Scratch, hit.Scratch
	}
	if int(o)+8 > len(x) || int(o)+8 > len(y) {
		return ""
	}
	return fmt.Sprintf(": in place %#016x, hit %#016x", binary.LittleEndian.Uint64(x[o:]), binary.LittleEndian.Uint64(y[o:]))
}
