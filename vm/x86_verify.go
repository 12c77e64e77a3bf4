package vm

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// VerifyConfig is one verification run: which kernel and which functions.
type VerifyConfig struct {
	// Deb is the kernel package (.deb) to boot; the vmlinux and config inside it
	// go into the initramfs so that the guest can read the kernel's tables.
	Deb string
	// Build, when not nil, is booted instead of Deb: a kernel from
	// BuildBoostKernel, whose vmlinux and .config go into the initramfs.
	Build *KernelBuild
	Args  guest.VerifyArgs
	// VM settings (Kernel and Files are filled in).
	VM Config
	// NoCache boots even when the record of the same package (its sha256),
	// guest binary, QEMU machine and arguments is cached (a Deb only; a
	// Build always boots).
	NoCache bool
	// Uprobes, when set, runs the uprobe-trial step in the same boot, after
	// kboost-verify (Verification.Uprobes).
	Uprobes *UprobeTrialRequest
}

// Verification is the outcome of Verify: the guest's record with kboost's
// predictions (Report) and the summary.
type Verification struct {
	Report  guest.VerifyReport
	Summary VerifySummary
	Timing  Timing
	// Cached is the cache file the report came from ("" when booted).
	Cached string
	// Uprobes is the uprobe-trial step's report (VerifyConfig.Uprobes; nil
	// when not requested).
	Uprobes *guest.UprobeReport
}

// x86View is x86-64's recordView: the seven fields of guest.VerifyFields,
// and kprobes that boost (a slot ending with the jmp back).
var x86View = &recordView{
	arch:    decode.X86_64,
	fields:  guest.VerifyFields,
	compare: (*guest.VerifyRecord).Compare,
	jumpsBack: func(r *guest.VerifyRecord) bool {
		return guest.SlotJumpsBack(r.Kernel.Slot, r.Kernel.SlotAddr, r.Kernel.Addr, len(r.Bytes)/2)
	},
}

// Summarize compares every record that ran (recordView.summarize, the
// summary of every architecture).
func Summarize(rep *guest.VerifyReport) VerifySummary { return x86View.summarize(rep, nil, true) }

// Disagreements returns the records that disagree on some field.
func Disagreements(rep *guest.VerifyReport) []guest.VerifyRecord {
	var out []guest.VerifyRecord
	for _, r := range x86View.disagreements(rep.Records) {
		out = append(out, *r)
	}
	return out
}

// WriteTable prints the agreement table and every disagreement.
func (v *Verification) WriteTable(w io.Writer) error {
	s := &v.Summary
	fmt.Fprintf(w, "kernel %s, policy %s: %d functions, %d probes (%d boundaries, %d non-boundaries), %d rounds, %d not run\n",
		v.Report.Release, v.Report.Policy, s.Functions, s.Probes, s.Boundary, s.NonBound, v.Report.Rounds, s.NotRun)
	if err := x86View.writeAgreement(w, s); err != nil {
		return err
	}
	counts := map[string]int{}
	for _, r := range v.Report.Records {
		if r.Round >= 0 {
			k := r.Verdict
			if r.Predicted.Errno != "" {
				k += " " + r.Predicted.Errno
			}
			if r.Predicted.Optimized {
				k += " +optimized"
			}
			counts[k]++
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprint(w, "predicted:")
	for _, k := range keys {
		fmt.Fprintf(w, " %s=%d", k, counts[k])
	}
	fmt.Fprintf(w, "\noptprobes: %d detour buffers compared (template, copied instructions, jmp back)", s.Agree["optslot"]+s.Disagree["optslot"])
	fmt.Fprintf(w, "\nboost: kboost predicts Boost for %d accepted probes; the kernel's slot jumps back (E9 rel32 to the next instruction) in %d\n", s.BoostPredicted, s.SlotJumpsBack)
	fmt.Fprintf(w, "kcore bytes differ from the vmlinux in %d of %d functions; optimizer on: %v\n", v.Report.KcoreDiffers, s.Functions, v.Report.Optimization)
	for _, n := range v.Report.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if v.Report.Leftover != "" {
		fmt.Fprintf(w, "LEFTOVER kprobes after the run:\n%s\n", v.Report.Leftover)
	}
	for _, r := range Disagreements(&v.Report) {
		fmt.Fprintf(w, "DISAGREE %s\n", FormatRecord(&r))
	}
	fmt.Fprintf(w, "timing: %s\n", v.TimingString())
	return nil
}

// TimingString summarizes where the time went.
func (v *Verification) TimingString() string {
	var parts []string
	keys := make([]string, 0, len(v.Report.TimingMS))
	for k := range v.Report.TimingMS {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("guest %s %v", k, time.Duration(v.Report.TimingMS[k])*time.Millisecond))
	}
	parts = append(parts, fmt.Sprintf("host prepare %v boot+steps %v transfer %v total %v",
		v.Timing.Prepare.Round(time.Millisecond), v.Timing.Boot.Round(time.Millisecond),
		v.Timing.Transfer.Round(time.Millisecond), v.Timing.Total.Round(time.Millisecond)))
	return strings.Join(parts, ", ")
}

// FormatRecord is one line describing a probe's prediction and the kernel's answer.
func FormatRecord(r *guest.VerifyRecord) string {
	var bad []string
	for _, f := range guest.VerifyFields {
		if ok, cmp := r.Compare()[f]; cmp && !ok {
			bad = append(bad, f)
		}
	}
	s := fmt.Sprintf("%s+%#x bytes=%s boundary=%v verdict=%s rules=%s predicted=%s kernel=%s",
		r.Func, r.Off, r.Bytes, r.Boundary, r.Verdict, strings.Join(r.Rules, ","), fmtOutcome(&r.Predicted), fmtOutcome(&r.Kernel))
	if len(bad) > 0 {
		s += " fields=" + strings.Join(bad, ",")
	}
	if r.Note != "" {
		s += " note=" + r.Note
	}
	return s
}

// WriteJSON prints one JSON record per probe and then the summary object.
func (v *Verification) WriteJSON(w io.Writer) error {
	return writeVerifyJSON(w, x86View, v.Report.Policy, &v.Report, v.Summary, v.Cached)
}

// x86Cached is a cached x86 record: the guest's record and, when trials were
// requested, the uprobe-trial report of the same boot.
type x86Cached struct {
	*guest.X86Record
	Uprobes *guest.UprobeReport `json:"uprobe_trial,omitempty"`
}

// Verify boots the kernel of vc.Deb (or vc.Build) with the kboost-verify step
// (and the uprobe-trial step after it when vc.Uprobes is set), which records
// what the kernel did, and returns the comparison with kboost's predictions,
// made here from the recorded bytes (guest.PredictX86). The record of a Deb
// is cached under $KBOOST_CACHE/verify (x86RecordPath; vc.NoCache boots
// again) with the guest's kallsyms beside it, together with the uprobe
// report when trials were requested; predictions and summary are made anew
// from it on every call.
func Verify(ctx context.Context, vc VerifyConfig) (*Verification, error) {
	cfg := vc.VM
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = 1024
	}
	// Expedited RCU grace periods: unregistering a kprobe waits for one, and
	// under TCG a normal grace period costs ~20 ms per probe. Kprobes' decisions
	// do not depend on it.
	cfg.Append = append(cfg.Append, "rcupdate.rcu_expedited=1")
	// The guest times its waits (the optimizer's above all) by its own clock.
	// Under TCG on a loaded host the kernel's TSC calibration can fail ("Fast
	// TSC calibration failed", "Unable to calibrate against PIT"), and in one
	// boot of Debian 7.2.13 the guest's clock ran 86 times faster than the
	// host's (4 h of guest time in a 2m49s run): the 3 s optimizer wait was
	// over in milliseconds and 1,181 detour buffers were not written yet. The
	// HPET counts QEMU's virtual clock, whatever the calibration; kprobes'
	// decisions do not depend on the clocksource.
	cfg.Append = append(cfg.Append, "clocksource=hpet")
	if os.Getenv("KBOOST_VERIFY_APPEND") != "" {
		cfg.Append = append(cfg.Append, strings.Fields(os.Getenv("KBOOST_VERIFY_APPEND"))...)
	}
	// E.g. "-cpu max": a CPU with SMAP, whose clac the kernel writes into
	// every optprobe detour buffer.
	if os.Getenv("KBOOST_VERIFY_QEMUARGS") != "" {
		cfg.QEMUArgs = append(cfg.QEMUArgs, strings.Fields(os.Getenv("KBOOST_VERIFY_QEMUARGS"))...)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Minute
		if vc.Uprobes != nil {
			cfg.Timeout += uprobeTimeout
		}
	}
	var kernel, vml, config []byte
	rel := ""
	if vc.Build != nil {
		var err error
		if kernel, err = os.ReadFile(vc.Build.BzImage); err != nil {
			return nil, err
		}
		if vml, err = os.ReadFile(vc.Build.Vmlinux); err != nil {
			return nil, err
		}
		if config, err = os.ReadFile(vc.Build.Config); err != nil {
			return nil, err
		}
		rel = vc.Build.Release
	} else {
		dk, err := kimage.ReadDeb(vc.Deb)
		if err != nil {
			return nil, err
		}
		if vml, err = kimage.ExtractVmlinux(dk.Vmlinuz); err != nil {
			return nil, err
		}
		kernel, config, rel = dk.Vmlinuz, dk.Config, dk.Version
	}
	// One policy plans the probed offsets (its kernel decoder's
	// boundaries, in the guest) and predicts them (here): the one asked
	// for, else the one of the package's release.
	args := vc.Args
	policyNote := ""
	if args.Policy == "" {
		args.Policy, policyNote = guest.X86Policy(rel, x86DefaultPolicy)
	}
	v := &Verification{}
	var rec guest.X86Record
	var kallsyms []byte
	cache := ""
	if vc.Build == nil {
		// The guest binary records (and plans the offsets): its changes
		// boot again.
		var err error
		if cfg.GuestBinary, err = guestBinary(ctx, cfg); err != nil {
			return nil, err
		}
		key, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		if vc.Uprobes != nil {
			// A record cached without trials (or with other ones) must not
			// answer a request with them.
			k, err := vc.Uprobes.cacheKey()
			if err != nil {
				return nil, err
			}
			key = append(append(key, '\n'), k...)
		}
		if cache, err = x86RecordPath(vc.Deb, cfg, key); err != nil {
			return nil, err
		}
		c := x86Cached{X86Record: &rec}
		if b, err := os.ReadFile(cache); err == nil && !vc.NoCache && json.Unmarshal(b, &c) == nil && len(rec.Records) > 0 &&
			(vc.Uprobes == nil || (c.Uprobes != nil && len(c.Uprobes.Records) > 0)) {
			if ks, err := readGzip(cache + ".kallsyms.gz"); err == nil {
				v.Cached, v.Uprobes, kallsyms = cache, c.Uprobes, ks
			}
		}
		if v.Cached == "" {
			rec, v.Uprobes = guest.X86Record{}, nil
		}
	}
	if v.Cached == "" {
		dir, err := os.MkdirTemp("", "kboost-verify-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.Kernel = dir + "/vmlinuz"
		if err := os.WriteFile(cfg.Kernel, kernel, 0o644); err != nil {
			return nil, err
		}
		if rel == "" {
			rel = "unknown"
		}
		ga := args
		ga.Vmlinux = "/boot/vmlinux-" + rel
		cfg.Files = append(append([]File{}, cfg.Files...), File{Name: ga.Vmlinux, Data: vml})
		raw, err := json.Marshal(ga)
		if err != nil {
			return nil, err
		}
		res, err := bootRecorder(ctx, cfg, guest.Step{Name: "kboost-verify", Args: raw}, "kboost-verify.json", &rec, vc.Uprobes)
		if err != nil {
			return nil, err
		}
		if kallsyms = res.Files[guest.X86KallsymsFile]; len(kallsyms) == 0 {
			return nil, &ProtocolError{Reason: "no " + guest.X86KallsymsFile + " in the result"}
		}
		v.Timing = res.Timing
		if note := guestClockNote(time.Duration(rec.TimingMS["total"])*time.Millisecond, res.Timing.Boot); note != "" {
			rec.Notes = append(rec.Notes, note)
		}
		if vc.Uprobes != nil {
			if v.Uprobes, err = uprobeReport(res, rec.Release); err != nil {
				return nil, err
			}
		}
		if cache != "" {
			if b, err := json.Marshal(x86Cached{&rec, v.Uprobes}); err == nil {
				if writeGzip(cache+".kallsyms.gz", kallsyms) == nil {
					_ = writeFileAtomic(cache, b, 0o644)
				}
			}
		}
	}
	// The predictions, from the recorded bytes, on every call.
	rep, err := predictX86(&rec, vml, config, kallsyms, args.Policy)
	if err != nil {
		return nil, err
	}
	if policyNote != "" {
		rep.Notes = append(rep.Notes, policyNote)
	}
	v.Report = rep
	v.Summary = Summarize(&v.Report)
	return v, nil
}

// predictX86 predicts rec with the policy: the vmlinux, its configuration
// and the booted kernel's kallsyms are the predictor's view of the kernel.
func predictX86(rec *guest.X86Record, vml, config, kallsyms []byte, policy string) (guest.VerifyReport, error) {
	syms, err := kimage.ParseSymbolMap(bytes.NewReader(kallsyms))
	if err != nil {
		return guest.VerifyReport{}, fmt.Errorf("vm: the guest's kallsyms: %w", err)
	}
	f, err := kimage.OpenBytes(vml)
	if err != nil {
		return guest.VerifyReport{}, fmt.Errorf("vm: vmlinux: %w", err)
	}
	defer f.Close()
	if slide := f.SetSymbols(syms); slide != 0 {
		return guest.VerifyReport{}, fmt.Errorf("vm: the guest's kallsyms and the vmlinux differ by %#x", slide)
	}
	var cfg *kimage.KConfig
	if len(config) > 0 {
		if cfg, err = kimage.ParseKConfig(config); err != nil {
			return guest.VerifyReport{}, fmt.Errorf("vm: kernel config: %w", err)
		}
	}
	return guest.PredictX86(rec, f, cfg, policy)
}

func writeGzip(path string, b []byte) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return writeFileAtomic(path, buf.Bytes(), 0o644)
}

func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// x86RecordPath is where Verify caches the record of booting deb: keyed by
// the record's version (guest.X86RecordVersion), the package's contents
// (sha256), the guest binary's (which records and plans), the QEMU machine (AMD64.Machine, cfg.QEMUArgs, cfg.Append,
// memory) and the recorder's arguments with the planning policy filled in
// (the paths Verify adds follow from the package).
func x86RecordPath(deb string, cfg Config, args []byte) (string, error) {
	debSum, err := fileSHA256(deb)
	if err != nil {
		return "", err
	}
	guestSum, err := fileSHA256(cfg.GuestBinary)
	if err != nil {
		return "", err
	}
	machine := strings.Join(append(append(append([]string{}, AMD64.Machine...), cfg.QEMUArgs...), cfg.Append...), " ")
	h := sha256.Sum256([]byte(fmt.Sprintf("x86 record v%d\n%s\n%s\n%s\n%d\n%s", guest.X86RecordVersion, debSum, guestSum, machine, cfg.MemoryMB, args)))
	return filepath.Join(CacheDir(), "verify", fmt.Sprintf("%s-x86-%s.json", strings.TrimSuffix(filepath.Base(deb), ".deb"), hex.EncodeToString(h[:])[:16])), nil
}

// x86DefaultPolicy plans and predicts a kernel whose release is unknown.
const x86DefaultPolicy = "linux-6.1"

// AMD64Verifier runs Verify: Debian linux-image-amd64 (or the boost
// kernel, never cached), slots and detour buffers read from /proc/kcore.
var AMD64Verifier = &Verifier{Arch: AMD64, DebianMeta: "linux-image-amd64", DefaultPolicy: x86DefaultPolicy,
	Fields: guest.VerifyFields, BoostKernel: true, Spacing: true, Cached: true, UprobeTrials: true,
	NonBoundary: "offsets inside instructions", run: verifyAMD64}

func verifyAMD64(ctx context.Context, v *Verifier, req VerifyRequest) (*VerifyOutcome, error) {
	va := guest.VerifyArgs{Policy: req.Policy, Funcs: req.Funcs, Pattern: req.Pattern, Sample: req.Sample,
		Seed: req.Seed, MaxSize: req.MaxSize, NonBoundary: req.NonBoundary, Spacing: req.Spacing, Boundaries: req.Boundaries}
	r, err := Verify(ctx, VerifyConfig{Deb: req.Deb, Build: req.Build, Args: va, VM: req.VM, NoCache: req.NoCache, Uprobes: req.Uprobes})
	if err != nil {
		return nil, err
	}
	return &VerifyOutcome{Verifier: v, Release: r.Report.Release, Policy: r.Report.Policy,
		Summary: r.Summary, Fields: v.Fields, Cached: r.Cached, Uprobes: r.Uprobes, table: r.WriteTable, json: r.WriteJSON}, nil
}
