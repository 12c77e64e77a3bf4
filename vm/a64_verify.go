package vm

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
	"golang.org/x/arch/arm64/arm64asm"
)

// ARM64VerifyConfig is one arm64 verification run: a Debian arm64 kernel
// package and the functions to probe.
type ARM64VerifyConfig struct {
	Deb  string // linux-image-*-arm64 .deb (kimage.FetchDebianKernel)
	Args guest.ARM64VerifyArgs
	// VM settings (Arch, Kernel filled in).
	VM Config
	// NoCache boots even when the kernel's record for the same package, QEMU
	// machine (Arch.Machine, VM.QEMUArgs, VM.Append) and arguments is cached.
	NoCache bool
	// Uprobes, when set, runs the uprobe-trial step in the same boot, after
	// the recorder's (ARM64Verification.Uprobes). Its report is cached with
	// the record, under a key that adds the request.
	Uprobes *UprobeTrialRequest
}

// ARM64Verification is the outcome of VerifyARM64.
type ARM64Verification struct {
	Report guest.ARM64Report
	Timing Timing
	Cached string // the cache file the report came from, "" when booted
	// Uprobes is the uprobe-trial step's report (ARM64VerifyConfig.Uprobes;
	// nil when not requested).
	Uprobes *guest.UprobeReport
}

// VerifyARM64 boots the arm64 kernel of vc.Deb under qemu-system-aarch64 with
// the kboost-verify-arm64 step and returns what the kernel did with every probe
// and kboost's predictions under Args.Policy (see guest.PredictARM64Report).
// The kernel's record is cached under $KBOOST_CACHE/verify, keyed by the
// package file, the QEMU machine, guest.ARM64RecordVersion and the arguments;
// predictions are made again on every call.
func VerifyARM64(ctx context.Context, vc ARM64VerifyConfig) (*ARM64Verification, error) {
	cfg := vc.VM
	cfg.Arch = ARM64
	dk, err := kimage.ReadDeb(vc.Deb)
	if err != nil {
		return nil, err
	}
	if !kimage.IsARM64Image(dk.Vmlinuz) {
		return nil, fmt.Errorf("vm: %s holds no arm64 Image (want a linux-image-*-arm64 package)", filepath.Base(vc.Deb))
	}
	kcfg, err := kimage.ParseKConfig(dk.Config)
	if err != nil {
		return nil, fmt.Errorf("vm: config of %s: %w", filepath.Base(vc.Deb), err)
	}
	v := &ARM64Verification{}
	var cached string
	if vc.Uprobes == nil {
		cached, err = cachedRecord(vc.Deb, ARM64, cfg, guest.ARM64RecordVersion, vc.Args, vc.NoCache, &v.Report, func(raw json.RawMessage) error {
			return v.boot(ctx, cfg, dk, raw, nil)
		})
	} else {
		cached, err = v.cachedWithUprobes(ctx, vc, cfg, dk)
	}
	if err != nil {
		return nil, err
	}
	v.Cached = cached
	tables, err := ARM64ImageTables(ctx, vc.Deb, dk, Config{Timeout: vc.VM.Timeout}, &v.Report)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		v.Report.Notes = append(v.Report.Notes, err.Error())
		tables = nil
	}
	guest.PredictARM64Report(&v.Report, vc.Args.Policy, kcfg, tables)
	return v, nil
}

func (v *ARM64Verification) boot(ctx context.Context, cfg Config, dk *kimage.DebKernel, args json.RawMessage, up *UprobeTrialRequest) error {
	v.Report, v.Uprobes = guest.ARM64Report{}, nil
	return bootFixed(ctx, cfg, dk, args, "Image", guest.ARM64VerifyStep, guest.ARM64VerifyFile, &v.Report, &v.Timing, up, &v.Uprobes)
}

// fixedUprobeRecord is what the records cache holds for a verification
// with uprobe trials: the recorder's report (its fields at the top level,
// as a record cached without them) and the uprobe-trial report.
type fixedUprobeRecord struct {
	*guest.ARM64Report
	Uprobes *guest.UprobeReport `json:"uprobe_trial"`
}

// cachedWithUprobes is cachedRecord for a request with uprobe trials: the
// key adds the request (UprobeTrialRequest.cacheKey) and a cached value
// serves only when it holds both reports, so a cache hit never drops the
// trials.
func (v *ARM64Verification) cachedWithUprobes(ctx context.Context, vc ARM64VerifyConfig, cfg Config, dk *kimage.DebKernel) (string, error) {
	key, err := vc.Uprobes.cacheKey()
	if err != nil {
		return "", err
	}
	c := &fixedUprobeRecord{ARM64Report: &v.Report}
	cached, err := cachedValue(vc.Deb, ARM64, cfg, guest.ARM64RecordVersion, vc.Args, key, vc.NoCache, c, func() bool {
		return len(v.Report.Records) > 0 && c.Uprobes != nil && len(c.Uprobes.Records) > 0
	}, func(raw json.RawMessage) error {
		err := v.boot(ctx, cfg, dk, raw, vc.Uprobes)
		c.Uprobes = v.Uprobes
		return err
	})
	v.Uprobes = c.Uprobes
	return cached, err
}

// bootFixed boots dk (its vmlinuz written as kernelFile) with the fixed-width
// kprobe recorder step and decodes the step's report file into report; with
// up, the uprobe-trial step runs after it and its report goes to upReport.
func bootFixed(ctx context.Context, cfg Config, dk *kimage.DebKernel, args json.RawMessage, kernelFile, step, file string, report *guest.ARM64Report, timing *Timing, up *UprobeTrialRequest, upReport **guest.UprobeReport) error {
	dir, err := os.MkdirTemp("", step+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg.Kernel = filepath.Join(dir, kernelFile)
	if err := os.WriteFile(cfg.Kernel, dk.Vmlinuz, 0o644); err != nil {
		return err
	}
	// No /proc/config.gz in Debian's kernels: the guest finds the package's
	// config at /boot/config-$(uname -r).
	cfg.Files = append(append([]File{}, cfg.Files...), File{Name: "/boot/config-" + dk.Version, Data: dk.Config})
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = 1024
	}
	// Unregistering a kprobe waits for an RCU grace period: expedite them.
	cfg.Append = append(cfg.Append, "rcupdate.rcu_expedited=1")
	if cfg.Timeout == 0 {
		cfg.Timeout = 45 * time.Minute
		if up != nil {
			cfg.Timeout += uprobeTimeout
		}
	}
	res, err := bootRecorder(ctx, cfg, guest.Step{Name: step, Args: args}, file, report, up)
	if err != nil {
		return err
	}
	*timing = res.Timing
	if hm := res.HostMem; hm.Requests > 0 {
		report.Notes = append(report.Notes, fmt.Sprintf("host memory: %d reads (%d failed), %d bytes, %v reading",
			hm.Requests, hm.Errors, hm.Bytes, hm.Time.Round(time.Millisecond)))
	}
	if dk.Version != "" && report.Release != dk.Version {
		return fmt.Errorf("vm: booted %s but the guest says it runs %q", dk.Version, report.Release)
	}
	if up != nil {
		if *upReport, err = uprobeReport(res, report.Release); err != nil {
			return err
		}
	}
	return nil
}

// A64Mnemonic names an instruction word for tables: golang.org/x/arch's
// mnemonic, else "hint#N" / "sys" / "?" with the top byte.
func A64Mnemonic(w uint32) string {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], w)
	if in, err := arm64asm.Decode(b[:]); err == nil {
		op := in.Op.String()
		if op == "HINT" || op == "SYS" || op == "MRS" || op == "MSR" {
			s := strings.ToLower(in.String())
			if f := strings.Fields(s); op == "MRS" && len(f) > 2 {
				return "mrs " + f[2]
			} else if op == "MSR" && len(f) > 1 {
				return "msr " + strings.TrimSuffix(f[1], ",")
			}
			return strings.ReplaceAll(s, " ", "")
		}
		return strings.ToLower(op)
	}
	return fmt.Sprintf("?%02x", w>>24)
}

// ARM64Summary is the summary of a fixed-width record: VerifySummary, the
// one of every architecture (misaligned offsets are its non-boundaries).
type ARM64Summary = VerifySummary

var arm64View = &recordView{
	arch:    decode.ARM64,
	fields:  guest.ARM64Fields,
	compare: guest.CompareARM64,
	mnemonic: func(h string) (string, bool) {
		w, ok := guest.A64Word(h)
		if !ok {
			return "", false
		}
		return A64Mnemonic(w), true
	},
}

// Summarize counts v's records.
func (v *ARM64Verification) Summarize() ARM64Summary { return summarizeFixed(&v.Report, arm64View) }

// summarizeFixed is recordView.summarize of a fixed-width recorder's report.
func summarizeFixed(rep *guest.ARM64Report, view *recordView) VerifySummary {
	return view.summarize(&rep.VerifyReport, rep.Funcs, rep.Predicted)
}

// WriteTable prints the kernel's outcome table (per mnemonic) and, when the
// guest predicted, the agreement table and every disagreement.
func (v *ARM64Verification) WriteTable(w io.Writer) error {
	return writeFixedTable(w, &v.Report, v.Timing, v.Cached, arm64View)
}

func writeFixedTable(w io.Writer, rep *guest.ARM64Report, timing Timing, cached string, view *recordView) error {
	s := summarizeFixed(rep, view)
	policy := rep.Policy
	if !rep.Predicted {
		policy = "none (kernel outcomes only)"
	}
	fmt.Fprintf(w, "kernel %s (%s), policy %s: %d functions (%d notrace, %d of them refused at every offset; %d overlapping kprobes/blacklist; %d __init), %d probes (%d boundaries, %d misaligned), %d rounds, %d not run\n",
		rep.Release, rep.Arch, policy, s.Functions, s.Notrace, s.NotraceAllRefused, s.Blacklisted, s.Init, s.Probes, s.Boundary, s.NonBound, rep.Rounds, s.NotRun)
	fmt.Fprintf(w, "boundaries: %s\nmisaligned: %s\n", fmtCounts(s.Outcomes), fmtCounts(s.NonBoundOutcomes))
	cols := map[string]bool{}
	for _, m := range s.ByMnemonic {
		for o := range m {
			cols[o] = true
		}
	}
	outs := sortedKeys(cols)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "mnemonic\tprobes\t%s\t\n", strings.Join(outs, "\t"))
	mns := sortedKeys(s.ByMnemonic)
	sort.SliceStable(mns, func(i, j int) bool { return sumCounts(s.ByMnemonic[mns[i]]) > sumCounts(s.ByMnemonic[mns[j]]) })
	for _, mn := range mns {
		row := []string{mn, fmt.Sprint(sumCounts(s.ByMnemonic[mn]))}
		for _, o := range outs {
			row = append(row, fmt.Sprint(s.ByMnemonic[mn][o]))
		}
		fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Predicted {
		if err := view.writeAgreement(w, &s); err != nil {
			return err
		}
	}
	for e, l := range rep.ErrorLogs {
		if l != "" {
			fmt.Fprintf(w, "error_log for %s: %s\n", e, l)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if rep.Leftover != "" {
		fmt.Fprintf(w, "LEFTOVER kprobes after the run:\n%s\n", rep.Leftover)
	}
	if rep.Predicted {
		for _, r := range view.disagreements(rep.Records) {
			fmt.Fprintf(w, "DISAGREE %s\n", formatFixedRecord(r, view))
		}
	}
	var parts []string
	for _, k := range sortedKeys(rep.TimingMS) {
		parts = append(parts, fmt.Sprintf("%s %v", k, time.Duration(rep.TimingMS[k])*time.Millisecond))
	}
	if cached != "" {
		parts = append(parts, "host: cached "+cached)
	} else {
		parts = append(parts, fmt.Sprintf("host: prepare %v boot+steps %v transfer %v total %v", timing.Prepare.Round(time.Millisecond),
			timing.Boot.Round(time.Millisecond), timing.Transfer.Round(time.Millisecond), timing.Total.Round(time.Millisecond)))
	}
	_, err := fmt.Fprintf(w, "timing: guest %s\n", strings.Join(parts, ", "))
	return err
}

// FormatARM64Record is one line describing a probe.
func FormatARM64Record(r *guest.VerifyRecord) string { return formatFixedRecord(r, arm64View) }

func formatFixedRecord(r *guest.VerifyRecord, view *recordView) string {
	mn := ""
	if w, ok := guest.A64Word(r.Bytes); ok {
		m, _ := view.mnemonic(r.Bytes)
		mn = fmt.Sprintf(" %08x(%s)", w, m)
	}
	return fmt.Sprintf("%s+%#x%s verdict=%s rules=%s predicted=%s kernel=%s", r.Func, r.Off, mn, r.Verdict,
		strings.Join(r.Rules, ","), fmtOutcome(&r.Predicted), fmtOutcome(&r.Kernel))
}

func fmtCounts(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// cachedRecord returns the guest's record for a verification of deb on arch:
// from the cache when one was made for the same package, QEMU machine
// (arch.Machine, cfg.QEMUArgs, cfg.Append), recorder version and arguments
// (the kernel's answers do not depend on kboost's predictions, so the
// policy is left out and predictions are made again on every use), else by
// boot, whose record is then cached. cached names the cache file used, ""
// after a boot.
func cachedRecord(deb string, arch *Arch, cfg Config, version int, args guest.ARM64VerifyArgs, noCache bool, report *guest.ARM64Report, boot func(raw json.RawMessage) error) (cached string, err error) {
	return cachedValue(deb, arch, cfg, version, args, nil, noCache, report, func() bool { return len(report.Records) > 0 }, boot)
}

// cachedValue is cachedRecord for any cached value: extra, when not empty,
// is part of the key (without it the key is cachedRecord's), and complete
// tells whether what the cache file gave is whole (else boot).
func cachedValue(deb string, arch *Arch, cfg Config, version int, args guest.ARM64VerifyArgs, extra []byte, noCache bool, value any, complete func() bool, boot func(raw json.RawMessage) error) (cached string, err error) {
	args.Policy = ""
	raw, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	machine := strings.Join(append(append(append([]string{}, arch.Machine...), cfg.QEMUArgs...), cfg.Append...), " ")
	key := fmt.Sprintf("%s\n%s\n%d\n%s", filepath.Base(deb), machine, version, raw)
	if len(extra) > 0 {
		key += "\n" + string(extra)
	}
	h := sha256.Sum256([]byte(key))
	cache := filepath.Join(CacheDir(), "verify", fmt.Sprintf("%s-%s.json", strings.TrimSuffix(filepath.Base(deb), ".deb"), hex.EncodeToString(h[:])[:16]))
	if b, err := os.ReadFile(cache); err == nil && !noCache && json.Unmarshal(b, value) == nil && complete() {
		return cache, nil
	}
	if err := boot(raw); err != nil {
		return "", err
	}
	if b, err := json.Marshal(value); err == nil {
		_ = writeFileAtomic(cache, b, 0o644)
	}
	return "", nil
}

// ARM64Verifier runs VerifyARM64: Debian linux-image-arm64.
var ARM64Verifier = &Verifier{Arch: ARM64, DebianMeta: "linux-image-arm64", DefaultPolicy: guest.ARM64Probes.DefaultPolicy,
	Fields: guest.ARM64Fields, Cached: true, UprobeTrials: true, NonBoundary: "misaligned offsets", run: verifyARM64}

func verifyARM64(ctx context.Context, v *Verifier, req VerifyRequest) (*VerifyOutcome, error) {
	r, err := VerifyARM64(ctx, ARM64VerifyConfig{Deb: req.Deb, Args: fixedArgs(req), VM: req.VM, NoCache: req.NoCache, Uprobes: req.Uprobes})
	if err != nil {
		return nil, err
	}
	o := fixedOutcome(v, &r.Report, arm64View, r.Cached, r.WriteTable)
	o.Uprobes = r.Uprobes
	return o, nil
}
