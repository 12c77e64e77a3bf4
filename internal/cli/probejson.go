package cli

import (
	"strings"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/jsonv"
	"github.com/kboost/kboost/loader"
)

// The records of `kboost probe add|list|watch --json` (schemas/probe-*.json):
// loader's types in the JSON vocabulary. loader's own JSON is also the
// booted verification's wire format, which this does not change.

type probeAddJSON struct {
	Arch      string          `json:"arch"`
	Policy    string          `json:"policy"`
	Event     string          `json:"event"`
	Point     string          `json:"point"`
	Predicted probeExpectJSON `json:"predicted"`
	Kernel    *probeListJSON  `json:"kernel,omitempty"` // absent: the kernel did not list the probe
	Readback  probeReadJSON   `json:"readback"`
	Agree     map[string]bool `json:"agree"`
}

type probeExpectJSON struct {
	Point        string      `json:"point"`
	Addr         *jsonv.Addr `json:"addr,omitempty"`
	Verdict      string      `json:"verdict"`
	Errno        string      `json:"errno,omitempty"`
	Reasons      []string    `json:"reasons"`
	Details      []string    `json:"details"`
	Ftrace       bool        `json:"ftrace"`
	Optimized    bool        `json:"optimized"`
	Bytes        jsonv.Bytes `json:"bytes,omitempty"`
	Resolved     string      `json:"resolved,omitempty"`
	OptBytes     jsonv.Bytes `json:"opt_bytes,omitempty"`
	TracefsInert bool        `json:"tracefs_inert,omitempty"`
	Warnings     []string    `json:"warnings,omitempty"`
}

type probeListJSON struct {
	Addr   jsonv.Addr `json:"addr"`
	Kind   string     `json:"kind"` // k (kprobe) or r (kretprobe)
	Point  string     `json:"point"`
	Module string     `json:"module,omitempty"`
	Flags  []string   `json:"flags"`
}

type probeReadJSON struct {
	SlotAddr         *jsonv.Addr `json:"slot_addr,omitempty"`
	Slot             string      `json:"slot,omitempty"`
	PredictedSlot    string      `json:"predicted_slot,omitempty"`
	SlotAgree        *bool       `json:"slot_agree,omitempty"`
	Detour           *jsonv.Addr `json:"detour,omitempty"`
	OptSlot          string      `json:"optslot,omitempty"`
	PredictedOptSlot string      `json:"predicted_optslot,omitempty"`
	OptSlotAgree     *bool       `json:"optslot_agree,omitempty"`
	Notes            []string    `json:"notes,omitempty"`
}

type probeRowJSON struct {
	Event string         `json:"event"`
	Point string         `json:"point"`
	Hits  uint64         `json:"hits"`
	List  *probeListJSON `json:"kernel,omitempty"`
}

type probeCountJSON struct {
	Point string `json:"point"`
	Hits  uint64 `json:"hits"`
}

func optAddr(a uint64) *jsonv.Addr {
	if a == 0 {
		return nil
	}
	v := jsonv.Addr(a)
	return &v
}

// spacedPairs spaces a hex string every two characters ("48..05" -> "48 .. 05"),
// masked bytes ("..") included.
func spacedPairs(h string) string {
	var sb strings.Builder
	for i := 0; i+1 < len(h); i += 2 {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(h[i : i+2])
	}
	return sb.String()
}

func probeExpect(x *loader.Expectation) probeExpectJSON {
	return probeExpectJSON{Point: x.Point, Addr: optAddr(x.Addr), Verdict: x.Verdict, Errno: x.Errno, Reasons: x.Decision.ReasonIDs(),
		Details: x.Decision.ReasonTexts(), Ftrace: x.Ftrace, Optimized: x.Optimized, Bytes: x.Bytes, Resolved: x.Resolved,
		OptBytes: x.OptBytes, TracefsInert: x.TracefsInert, Warnings: x.Warnings}
}

func probeList(le *loader.ListEntry) *probeListJSON {
	if le == nil {
		return nil
	}
	return &probeListJSON{Addr: jsonv.Addr(le.Addr), Kind: le.Kind, Point: le.Point, Module: le.Module, Flags: append([]string{}, le.Flags...)}
}

func probeRead(rb *loader.Readback) probeReadJSON {
	return probeReadJSON{SlotAddr: optAddr(rb.SlotAddr), Slot: spacedPairs(rb.Slot), PredictedSlot: spacedPairs(rb.PredictedSlot), SlotAgree: rb.SlotAgree,
		Detour: optAddr(rb.Detour), OptSlot: spacedPairs(rb.OptSlot), PredictedOptSlot: spacedPairs(rb.PredictedOptSlot), OptSlotAgree: rb.OptSlotAgree, Notes: rb.Notes}
}

func probeAdd(lv *loader.Live, r *addRecord) probeAddJSON {
	arch := decode.X86_64.Name // live kprobes run on this host's kernel
	if f := lv.Pred.File; f != nil && f.Arch != nil {
		arch = f.Arch.Name
	}
	return probeAddJSON{Arch: arch, Policy: lv.Pred.Policy.Name, Event: r.Event, Point: r.Point, Predicted: probeExpect(&r.Predicted),
		Kernel: probeList(r.Kernel), Readback: probeRead(&r.Readback), Agree: r.Agree}
}
