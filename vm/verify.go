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
	"time"

	"github.com/kboost/kboost/vm/guest"
)

// VerifySummary counts agreements per field (see guest.VerifyRecord.Compare).
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
	BoostPredicted int `json:"boost_predicted"`
	SlotJumpsBack  int `json:"slot_jumps_back"`
}

// summarizeRecords is the one summary of every architecture's records:
// probes that ran, boundaries and the rest, and, when compare is set (the
// architecture's comparison of a record's fields), agreements per field.
// jumpBack counts BoostPredicted and SlotJumpsBack (a slot that ends with a
// jmp back: the architectures whose kprobes boost).
func summarizeRecords(functions int, recs []guest.VerifyRecord, compare func(*guest.VerifyRecord) map[string]bool, jumpBack bool) VerifySummary {
	s := VerifySummary{Functions: functions, Agree: map[string]int{}, Disagree: map[string]int{}}
	for i := range recs {
		r := &recs[i]
		if r.Round < 0 {
			s.NotRun++
			continue
		}
		s.Probes++
		if r.Boundary {
			s.Boundary++
		} else {
			s.NonBound++
		}
		if jumpBack && r.Boundary && r.Kernel.Errno == "" {
			if r.Verdict == "boost" {
				s.BoostPredicted++
			}
			if r.Kernel.Slot != "" && guest.SlotJumpsBack(r.Kernel.Slot, r.Kernel.SlotAddr, r.Kernel.Addr, len(r.Bytes)/2) {
				s.SlotJumpsBack++
			}
		}
		if compare == nil {
			continue
		}
		all := true
		for f, ok := range compare(r) {
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
	return s
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

// writeRecordsJSON prints one JSON object per record that keep accepts (the
// probes of the rounds, not the set-up entries), then the summary object.
func writeRecordsJSON(w io.Writer, arch, policy string, records []guest.VerifyRecord, summary any) error {
	enc := json.NewEncoder(w)
	for i := range records {
		r := &records[i]
		if r.Round < 0 {
			continue
		}
		if err := enc.Encode(verifyRecordJSON{Arch: arch, Policy: policy, Func: r.Func, Off: r.Off, Boundary: r.Boundary, Bytes: spaced(r.Bytes),
			Verdict: r.Verdict, Reasons: r.Rules, Predicted: outcomeView(&r.Predicted), Kernel: outcomeView(&r.Kernel), Round: r.Round, Note: r.Note}); err != nil {
			return err
		}
	}
	return enc.Encode(summary)
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

// x86RecordPath is where Verify caches the record of booting deb: keyed by

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
