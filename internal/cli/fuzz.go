package cli

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/x86gen"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kimage"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newFuzzCmd(s Streams) *cobra.Command {
	var (
		archName, policyName, out, tag string
		n, trials                      int
		dur                            time.Duration
		seed                           uint64
		jsonOut, quiet                 bool
	)
	cmd := &cobra.Command{
		Use:   "fuzz",
		Short: "Differential fuzz: kboost's verdicts and decoder against the CPU",
		Long: `Generate x86 instructions (structured: prefixes x opcode maps x ModRM/SIB x
displacement x immediate, plus mutations of real kernel instructions sampled from
the cached Debian vmlinux, else from /usr/bin), and for each one:

  - compare the decoder's length with the CPU's (page-boundary oracle);
  - classify it under --policy (CONFIG_PREEMPTION off, so boosting is on) and run
    it in place and through the simulated kprobe hit (boosted slot, single-step
    slot with the IP fixup, or the kernel's emulation) from several random
    register states, comparing registers, flags, IP, stack and scratch memory.

Findings go to --out as JSON lines (deduplicated by instruction form, each with a
minimized reproducer): unsafe-boost (boosted but diverges: a kboost or kernel
bug), policy-divergence (the kernel's emulation or single-step diverges from the
CPU: a finding about Linux), missed-boost (not boosted, but boosting agreed on
every trial), length / length-vendor / decoder-rejects. The 66-prefixed near
branches that AMD CPUs decode with rel16 in 64-bit mode are counted as
length-vendor, not as decoder errors. Ctrl-C stops and still prints the summary.`,
		Example: `  kboost fuzz -n 100000 --out findings.jsonl
  kboost fuzz --arch i386 --duration 1m --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := decode.ParseMode(archName)
			if err != nil {
				return usagef("--arch: %v", err)
			}
			pol, err := boost.Lookup(policyName)
			if err != nil {
				return usagef("--policy: %v (see 'kboost policies')", err)
			}
			if !pol.Supports(mode) {
				return usagef("policy %s does not model %s", pol.Name, archName)
			}
			if n <= 0 && dur <= 0 {
				return usagef("give -n N or --duration D")
			}
			a, err := kernelsim.ArchFor(mode)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			sb, err := kernelsim.NewWithOptions(a, kernelsim.Options{Tag: tag})
			if err != nil {
				return err
			}
			defer sb.Close()
			var fw *bufio.Writer
			if out != "" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				fw = bufio.NewWriter(f)
				defer fw.Flush()
			}
			samples, from := sampleKernelInsts(mode, 200000, seed)
			gen := newCaseGen(mode, seed, samples)
			fz := kernelsim.NewFuzzer(kernelsim.FuzzConfig{
				Backend: sb, Policy: pol, Trials: trials, Seed: seed, Next: gen.next,
				OnFinding: func(fd *kernelsim.Finding) {
					if fw != nil {
						b, _ := json.Marshal(fd)
						fw.Write(append(b, '\n'))
					}
				},
			})
			prog := isTerminal(s.Err)
			if sb.Emulator() != "" && !jsonOut {
				fmt.Fprintf(s.Err, "%s runs under %s (no hardware length oracle)\n", a.Name, sb.Emulator())
			}
			start, last := time.Now(), time.Now()
			const block = 64
			for {
				if ctx.Err() != nil {
					break
				}
				if n > 0 && fz.Stats.Cases >= n {
					break
				}
				if dur > 0 && time.Since(start) >= dur {
					break
				}
				k := block
				if n > 0 && n-fz.Stats.Cases < k {
					k = n - fz.Stats.Cases
				}
				if err := fz.Block(k); err != nil {
					if ctx.Err() != nil {
						break
					}
					return err
				}
				if !prog && !quiet && time.Since(last) > 30*time.Second {
					last = time.Now()
					st := &fz.Stats
					fmt.Fprintf(s.Err, "%s: %d cases, %d checks (%.0f/s): unsafe %d, kernel divergences %d, missed %d, length errors %d\n",
						time.Since(start).Round(time.Second), st.Cases, st.Checks, float64(st.Checks)/time.Since(start).Seconds(), st.UnsafeBoosts, st.PolicyDivergences, st.MissedBoosts, st.LengthErrors)
				}
				if prog && time.Since(last) > 500*time.Millisecond {
					last = time.Now()
					st := &fz.Stats
					el := time.Since(start).Seconds()
					fmt.Fprintf(s.Err, "\r%d cases (%.0f/s), %d checks (%.0f/s): unsafe %d, kernel divergences %d, missed %d, length errors %d  ",
						st.Cases, float64(st.Cases)/el, st.Checks, float64(st.Checks)/el, st.UnsafeBoosts, st.PolicyDivergences, st.MissedBoosts, st.LengthErrors)
				}
			}
			if prog {
				fmt.Fprint(s.Err, "\r\033[K")
			}
			st := fz.Finish()
			sum := fuzzSummary{FuzzStats: st, Arch: a.Name, Policy: pol.Name, Seed: seed, Samples: from, Interrupted: ctx.Err() != nil,
				Emulator: sb.Emulator(), Trials: max(trials, 1)}
			if fw != nil {
				if err := fw.Flush(); err != nil {
					return err
				}
			}
			if jsonOut {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(sum)
			}
			printFuzzSummary(s.Out, &sum)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&archName, "arch", "x86-64", "instruction set: x86-64 or i386")
	f.StringVar(&policyName, "policy", "linux-6.1", "kernel policy (see 'kboost policies')")
	f.IntVarP(&n, "n", "n", 0, "number of cases")
	f.DurationVar(&dur, "duration", 0, "run for this long (e.g. 30s, 5m)")
	f.Uint64Var(&seed, "seed", 1, "random seed (the run is deterministic for a seed and sample set)")
	f.StringVar(&out, "out", "", "write findings to this file as JSON lines")
	f.BoolVar(&jsonOut, "json", false, "print the final summary as a JSON object")
	f.BoolVar(&quiet, "quiet", false, "no progress lines when stderr is not a terminal")
	f.IntVar(&trials, "trials", 3, "random register states per case")
	f.StringVar(&tag, "sandbox-tag", "", "tag appended to the sandbox command line (tests)")
	f.MarkHidden("sandbox-tag")
	return cmd
}

type fuzzSummary struct {
	kernelsim.FuzzStats
	Arch        string `json:"arch"`
	Policy      string `json:"policy"`
	Seed        uint64 `json:"seed"`
	Trials      int    `json:"trials"`
	Samples     string `json:"samples_from"`
	Emulator    string `json:"emulator,omitempty"`
	Interrupted bool   `json:"interrupted"`
}

func printFuzzSummary(w io.Writer, s *fuzzSummary) {
	fmt.Fprintf(w, "fuzz %s under %s: %d cases, %d differential checks in %.1fs (%.0f checks/s, %.0f cases/s; %.0f checks per CPU-second)%s\n",
		s.Arch, s.Policy, s.Cases, s.Checks, s.Elapsed, s.ChecksPerSecond, s.CasesPerSecond, s.ChecksPerCPUSecond, map[bool]string{true: " (interrupted)"}[s.Interrupted])
	fmt.Fprintf(w, "  samples: %s; %d trials per case", s.Samples, s.Trials)
	if s.Emulator != "" {
		fmt.Fprintf(w, "; executed by %s", s.Emulator)
	}
	fmt.Fprintln(w)
	var vs []string
	for k := range s.Verdicts {
		vs = append(vs, k)
	}
	sort.Strings(vs)
	fmt.Fprintf(w, "  verdicts:")
	for _, k := range vs {
		fmt.Fprintf(w, " %s %d", k, s.Verdicts[k])
	}
	fmt.Fprintf(w, "; decoder refused %d\n", s.DecodeInvalid)
	fmt.Fprintf(w, "  unsafe boosts:         %d\n", s.UnsafeBoosts)
	fmt.Fprintf(w, "  kernel divergences:    %d (emulated / single-stepped hits that differ from the CPU; %d of them 66-prefixed branches, AMD-only)\n", s.PolicyDivergences, s.VendorDivergences)
	fmt.Fprintf(w, "  missed boosts:         %d\n", s.MissedBoosts)
	fmt.Fprintf(w, "  not verifiable:        %d; nondeterministic %d; unreproducible %d; uncontrolled memory %d; emulator artifacts %d; inconclusive %d; slot problems %d\n", s.NotVerifiable, s.Nondeterministic, s.Unreproducible, s.Uncontrolled, s.EmulatorArtifacts, s.Inconclusive, s.SlotProblems)
	fmt.Fprintf(w, "  length oracle:         %s\n", s.LengthOracle)
	fmt.Fprintf(w, "  length errors:         %d of %d checked (AMD 66-branch rel16: %d; CPU #UD: %d; CPU #GP too long: %d; decoder refuses what the CPU runs: %d; unknown %d)\n",
		s.LengthErrors, s.LengthChecked, s.LengthVendor, s.CPURejected, s.CPUTooLong, s.DecoderRejectsRun, s.LengthUnknown)
	fmt.Fprintf(w, "  distinct findings:     %d\n", s.FindingKeys)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// caseGen mixes x86gen's structured candidates with mutated real
// instructions.
type caseGen struct {
	g       *x86gen.Gen
	rng     *rand.Rand
	samples [][]byte
}

func newCaseGen(m decode.Mode, seed uint64, samples [][]byte) *caseGen {
	bits := 64
	if m == decode.Mode32 {
		bits = 32
	}
	return &caseGen{g: x86gen.New(x86gen.Config{Seed: seed, Bits: bits}), rng: rand.New(rand.NewPCG(seed, 0x6d757461)), samples: samples}
}

func (c *caseGen) next(dst []byte) []byte {
	if len(c.samples) == 0 || c.rng.IntN(2) == 0 {
		return c.g.Next(dst)
	}
	s := c.samples[c.rng.IntN(len(c.samples))]
	b := append(dst, s...)
	switch c.rng.IntN(8) {
	case 0, 1: // as is
	case 2: // flip a bit
		i := c.rng.IntN(len(b))
		b[i] ^= 1 << c.rng.IntN(8)
	case 3: // a random byte
		b[c.rng.IntN(len(b))] = byte(c.rng.Uint32())
	case 4: // prepend a legacy prefix
		pf := []byte{0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3}
		b = append([]byte{pf[c.rng.IntN(len(pf))]}, b...)
	case 5: // randomize the bytes after the opcode (ModRM, SIB, displacement, immediate)
		for i := min(len(b)-1, 1+c.rng.IntN(2)); i < len(b); i++ {
			b[i] = byte(c.rng.Uint32())
		}
	case 6: // drop the first byte
		if len(b) > 1 {
			b = b[1:]
		}
	case 7: // pad with random tail bytes (the decoder decides the length)
		for range 4 {
			b = append(b, byte(c.rng.Uint32()))
		}
	}
	if len(b) > 15 {
		b = b[:15]
	}
	return b
}

// sampleKernelInsts decodes the executable sections of the cached Debian
// vmlinux for the mode (else /usr/bin binaries) and returns up to max
// instructions, evenly sampled.
func sampleKernelInsts(m decode.Mode, max int, seed uint64) ([][]byte, string) {
	want := elf.EM_X86_64
	if m == decode.Mode32 {
		want = elf.EM_386
	}
	var files []string
	if elfs, _ := filepath.Glob(filepath.Join(kimage.CacheDir(), "vmlinux", "*.elf")); len(elfs) > 0 {
		for _, p := range elfs {
			if f, err := elf.Open(p); err == nil {
				if f.Machine == want {
					files = append(files, p)
				}
				f.Close()
			}
		}
	}
	if len(files) == 0 {
		bins, _ := filepath.Glob("/usr/bin/*")
		sort.Strings(bins)
		for _, p := range bins {
			if len(files) >= 20 {
				break
			}
			if f, err := elf.Open(p); err == nil {
				if f.Machine == elf.EM_X86_64 {
					files = append(files, p)
				}
				f.Close()
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x73616d70))
	var out [][]byte
	for _, p := range files {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		for _, sec := range f.Sections {
			if sec.Flags&elf.SHF_EXECINSTR == 0 || sec.Type != elf.SHT_PROGBITS {
				continue
			}
			data, err := sec.Data()
			if err != nil {
				continue
			}
			var in decode.Inst
			// keep about max/len(files) instructions per file
			keep := float64(max) / float64(len(files)) / float64(len(data)/4+1)
			for off := 0; off < len(data); {
				err := decode.DecodeInto(&in, data[off:], m, sec.Addr+uint64(off))
				l := max1(in.Len)
				if err == nil && rng.Float64() < keep {
					out = append(out, append([]byte(nil), data[off:off+l]...))
				}
				off += l
			}
		}
		f.Close()
	}
	if len(out) > max {
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		out = out[:max]
	}
	from := "none (structured generation only)"
	if len(files) > 0 {
		from = fmt.Sprintf("%d instructions from %s", len(out), filepath.Base(files[0]))
		if len(files) > 1 {
			from += fmt.Sprintf(" and %d more", len(files)-1)
		}
	}
	return out, from
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}
