package vm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/vm/guest"
)

// VerifySummary is the one summary of every architecture's records
// (recordView.summarize): probes, agreements per compared field and the
// kernel's outcomes. The fields tagged "-" are the tables' and stay out of
// the --json summary (schemas/vm-verify.json).
type VerifySummary struct {
	Functions int            `json:"functions"`
	Probes    int            `json:"probes"`
	NotRun    int            `json:"not_run"`
	Boundary  int            `json:"boundary"`
	NonBound  int            `json:"non_boundary"`
	Agree     map[string]int `json:"agree"`
	Disagree  map[string]int `json:"disagree"`
	// AllAgree counts probes agreeing on every compared field.
	AllAgree int `json:"all_agree"`
	// BoostPredicted counts accepted boundary probes kboost predicts Boost;
	// SlotJumpsBack those whose kernel slot ends with a jmp back (see
	// guest.SlotJumpsBack). The jmpback field compares them probe by probe.
	// Both stay 0 where kprobes never boost (recordView.jumpsBack).
	BoostPredicted int `json:"boost_predicted"`
	SlotJumpsBack  int `json:"slot_jumps_back"`

	// Outcomes counts the kernel's outcome (KernelOutcome) of the boundary
	// probes that ran, NonBoundOutcomes of the others; ByMnemonic the
	// boundaries' outcomes per instruction mnemonic (architectures whose
	// view names one), the probes of notrace functions under "notrace-fn".
	Outcomes         map[string]int            `json:"-"`
	NonBoundOutcomes map[string]int            `json:"-"`
	ByMnemonic       map[string]map[string]int `json:"-"`
	// The recorded functions' facts (recorders that keep guest.KernelFunc):
	// notrace ones, those of them refused at every offset, those
	// overlapping kprobes' blacklist, __init ones.
	Notrace, NotraceAllRefused, Blacklisted, Init int `json:"-"`
}

// recordView is one architecture's value for what every verification does
// with its records on the host: summary, tables, JSON (x86View, arm64View,
// armView in the per-arch files).
type recordView struct {
	arch *decode.Arch // its Name is the "arch" of the --json records
	// fields are the compared fields in table order; compare says per field
	// whether a record agrees (absent: the field does not apply).
	fields  []string
	compare func(*guest.VerifyRecord) map[string]bool
	// mnemonic names a record's instruction (hex) for the outcome table
	// per mnemonic; nil: the architecture prints none.
	mnemonic func(hexBytes string) (string, bool)
	// jumpsBack, where kprobes boost, says whether an accepted boundary's
	// kernel slot ends with the jump back (BoostPredicted, SlotJumpsBack).
	jumpsBack func(r *guest.VerifyRecord) bool
}

// summarize is the one summary of every architecture's records: rep's
// probes, the kernel's outcomes, the functions' facts from funcs (nil when
// the recorder keeps none: then rep.Functions counts them) and, when
// predicted, agreements per field.
func (view *recordView) summarize(rep *guest.VerifyReport, funcs []guest.KernelFunc, predicted bool) VerifySummary {
	s := VerifySummary{Functions: len(rep.Functions), Agree: map[string]int{}, Disagree: map[string]int{},
		Outcomes: map[string]int{}, NonBoundOutcomes: map[string]int{}, ByMnemonic: map[string]map[string]int{}}
	if funcs != nil {
		s.Functions = len(funcs)
	}
	refused, traced := map[string]bool{}, map[string]bool{}
	for _, f := range funcs {
		refused[f.Name], traced[f.Name] = true, f.Traced
	}
	for i := range rep.Records {
		r := &rep.Records[i]
		if r.Round < 0 {
			s.NotRun++
			continue
		}
		s.Probes++
		if r.Kernel.Errno == "" {
			refused[r.Func] = false
		}
		o := KernelOutcome(r)
		if r.Boundary {
			s.Boundary++
			s.Outcomes[o]++
		} else {
			s.NonBound++
			s.NonBoundOutcomes[o]++
		}
		if view.mnemonic != nil && r.Boundary {
			if mn, ok := view.mnemonic(r.Bytes); ok {
				if s.ByMnemonic[mn] == nil {
					s.ByMnemonic[mn] = map[string]int{}
				}
				if funcs != nil && !traced[r.Func] {
					o = "notrace-fn" // refused for the function, whatever the word
				}
				s.ByMnemonic[mn][o]++
			}
		}
		if view.jumpsBack != nil && r.Boundary && r.Kernel.Errno == "" {
			if r.Verdict == "boost" {
				s.BoostPredicted++
			}
			if r.Kernel.Slot != "" && view.jumpsBack(r) {
				s.SlotJumpsBack++
			}
		}
		if !predicted {
			continue
		}
		all := true
		for f, ok := range view.compare(r) {
			if ok {
				s.Agree[f]++
			} else {
				s.Disagree[f]++
				all = false
			}
		}
		if all {
			s.AllAgree++
		}
	}
	for _, f := range funcs {
		if !f.Traced {
			s.Notrace++
			if refused[f.Name] {
				s.NotraceAllRefused++
			}
		}
		if len(f.Blacklist) > 0 {
			s.Blacklisted++
		}
		if f.Init {
			s.Init++
		}
	}
	return s
}

// writeAgreement prints the agreement table of every architecture: per
// compared field, the probes compared, agreeing and disagreeing, then all
// fields at once.
func (view *recordView) writeAgreement(w io.Writer, s *VerifySummary) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "field\tcompared\tagree\tdisagree\t")
	for _, f := range view.fields {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", f, s.Agree[f]+s.Disagree[f], s.Agree[f], s.Disagree[f])
	}
	fmt.Fprintf(tw, "all fields\t%d\t%d\t%d\t\n", s.Probes, s.AllAgree, s.Probes-s.AllAgree)
	return tw.Flush()
}

// disagreements returns the records that ran and disagree on some field.
func (view *recordView) disagreements(recs []guest.VerifyRecord) []*guest.VerifyRecord {
	var out []*guest.VerifyRecord
	for i := range recs {
		r := &recs[i]
		if r.Round < 0 {
			continue
		}
		for _, ok := range view.compare(r) {
			if !ok {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// KernelOutcome names what the kernel did with one probe: the errno when it
// refused, "slot" when it copied the instruction to a slot (single-step out of
// line), "ftrace" for an [FTRACE] probe, "noslot" when it accepted without a
// slot (simulated, or boosted without one).
func KernelOutcome(r *guest.VerifyRecord) string {
	switch {
	case r.Round < 0:
		return "not-run"
	case r.Kernel.Errno != "":
		return r.Kernel.Errno
	case r.Kernel.Ftrace:
		return "ftrace"
	case r.Kernel.Slot != "":
		return "slot"
	default:
		return "noslot"
	}
}

func fmtOutcome(o *guest.Outcome) string {
	if o.Errno != "" {
		return "{" + o.Errno + "}"
	}
	s := fmt.Sprintf("{ok addr=%#x", o.Addr)
	if o.Ftrace {
		s += " FTRACE"
	}
	if o.Optimized {
		s += " OPTIMIZED"
	}
	if o.Slot != "" {
		s += fmt.Sprintf(" slot@%#x=%s", o.SlotAddr, o.Slot)
	}
	if o.OptSlot != "" {
		s += fmt.Sprintf(" detour@%#x=%s", o.OptAddr, o.OptSlot)
	}
	return s + "}"
}

// verifyRecordJSON is a VerifyRecord as `kboost vm verify --json` prints it
// (schemas/vm-verify.json): kboost's JSON vocabulary. The guest's own
// records (its wire format and the cache) keep their form.
type verifyRecordJSON struct {
	Arch      string      `json:"arch"`
	Policy    string      `json:"policy,omitempty"` // absent with --policy none
	Func      string      `json:"func"`
	Off       uint64      `json:"off"`
	Boundary  bool        `json:"boundary"`
	Bytes     string      `json:"bytes,omitempty"`
	Verdict   string      `json:"verdict,omitempty"`
	Reasons   []string    `json:"reasons,omitempty"`
	Predicted outcomeJSON `json:"predicted"`
	Kernel    outcomeJSON `json:"kernel"`
	Round     int         `json:"round"`
	Note      string      `json:"note,omitempty"`
}

type outcomeJSON struct {
	Errno     string `json:"errno,omitempty"`
	Addr      string `json:"addr,omitempty"`
	Ftrace    bool   `json:"ftrace,omitempty"`
	Optimized bool   `json:"optimized,omitempty"`
	Slot      string `json:"slot,omitempty"`
	SlotAddr  string `json:"slot_addr,omitempty"`
	OptSlot   string `json:"optslot,omitempty"`
	OptAddr   string `json:"opt_addr,omitempty"`
}

func outcomeView(o *guest.Outcome) outcomeJSON {
	return outcomeJSON{Errno: o.Errno, Addr: hexOrEmpty(o.Addr), Ftrace: o.Ftrace, Optimized: o.Optimized, Slot: spaced(o.Slot),
		SlotAddr: hexOrEmpty(o.SlotAddr), OptSlot: spaced(o.OptSlot), OptAddr: hexOrEmpty(o.OptAddr)}
}

func hexOrEmpty(a uint64) string {
	if a == 0 {
		return ""
	}
	return fmt.Sprintf("%#x", a)
}

// spaced writes hex (".." for masked bytes included) one byte per pair.
func spaced(h string) string {
	var b strings.Builder
	for i := 0; i+1 < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// ParseRecordJSON reads one probe record of `vm verify --json` back into
// the guest's form (the inverse of the printed view: spaced bytes, 0x
// addresses, errno absent when accepted).
func ParseRecordJSON(line []byte) (guest.VerifyRecord, error) {
	var v verifyRecordJSON
	if err := json.Unmarshal(line, &v); err != nil {
		return guest.VerifyRecord{}, err
	}
	r := guest.VerifyRecord{Func: v.Func, Off: v.Off, Boundary: v.Boundary, Bytes: strings.ReplaceAll(v.Bytes, " ", ""),
		Verdict: v.Verdict, Rules: v.Reasons, Round: v.Round, Note: v.Note}
	var err error
	for _, o := range []struct {
		view *outcomeJSON
		out  *guest.Outcome
	}{{&v.Predicted, &r.Predicted}, {&v.Kernel, &r.Kernel}} {
		*o.out = guest.Outcome{Errno: o.view.Errno, Ftrace: o.view.Ftrace, Optimized: o.view.Optimized,
			Slot: strings.ReplaceAll(o.view.Slot, " ", ""), OptSlot: strings.ReplaceAll(o.view.OptSlot, " ", "")}
		for _, a := range []struct {
			s string
			p *uint64
		}{{o.view.Addr, &o.out.Addr}, {o.view.SlotAddr, &o.out.SlotAddr}, {o.view.OptAddr, &o.out.OptAddr}} {
			if a.s != "" && err == nil {
				*a.p, err = strconv.ParseUint(strings.TrimPrefix(a.s, "0x"), 16, 64)
			}
		}
	}
	return r, err
}

// writeVerifyJSON prints `vm verify --json` of any architecture: one JSON
// object per record that ran (the probes of the rounds, not the set-up
// entries), then the summary object.
func writeVerifyJSON(w io.Writer, view *recordView, policy string, rep *guest.VerifyReport, s VerifySummary, cached string) error {
	enc := json.NewEncoder(w)
	arch := view.arch.Name
	for i := range rep.Records {
		r := &rep.Records[i]
		if r.Round < 0 {
			continue
		}
		if err := enc.Encode(verifyRecordJSON{Arch: arch, Policy: policy, Func: r.Func, Off: r.Off, Boundary: r.Boundary, Bytes: spaced(r.Bytes),
			Verdict: r.Verdict, Reasons: r.Rules, Predicted: outcomeView(&r.Predicted), Kernel: outcomeView(&r.Kernel), Round: r.Round, Note: r.Note}); err != nil {
			return err
		}
	}
	return enc.Encode(struct {
		Summary VerifySummary `json:"summary"`
		Arch    string        `json:"arch"`
		Release string        `json:"release"`
		Policy  string        `json:"policy"`
		Rounds  int           `json:"rounds"`
		Cached  string        `json:"cached,omitempty"`
		Notes   []string      `json:"notes,omitempty"`
	}{s, arch, rep.Release, policy, rep.Rounds, cached, rep.Notes})
}

// bootRecorder boots cfg with a verify recorder's step (then, with up, the
// uprobe-trial step) and decodes the step's report file into report: the one
// way every architecture's record comes from the guest. The result is for
// what else the caller reads from the boot.
func bootRecorder(ctx context.Context, cfg Config, step guest.Step, file string, report any, up *UprobeTrialRequest) (*Result, error) {
	steps := []guest.Step{step}
	if up != nil {
		st, err := up.step(&cfg)
		if err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	res, err := Run(ctx, cfg, steps...)
	if err != nil {
		return nil, err
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	b, ok := res.Files[file]
	if !ok {
		return nil, &ProtocolError{Reason: "no " + file + " in the result"}
	}
	if err := json.Unmarshal(b, report); err != nil {
		return nil, &ProtocolError{Reason: file + ": " + err.Error()}
	}
	return res, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// guestClockNote says when the guest's clock ran fast: its step took
// longer by its own clock than the whole boot by the host's (then every
// wait the guest timed was short in real time).
func guestClockNote(guestStep, hostBoot time.Duration) string {
	if hostBoot <= 0 || guestStep <= hostBoot*3/2 {
		return ""
	}
	return fmt.Sprintf("the guest's clock ran fast: its step took %v by its clock, the whole boot %v by the host's (%.0fx); waits it timed were short",
		guestStep.Round(time.Second), hostBoot.Round(time.Second), float64(guestStep)/float64(hostBoot))
}
