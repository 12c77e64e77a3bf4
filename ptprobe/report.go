package ptprobe

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Hex prints an address as a "0x..." string in JSON.
type Hex uint64

// MarshalText is the "0x..." form.
func (h Hex) MarshalText() ([]byte, error) { return []byte(fmt.Sprintf("%#x", uint64(h))), nil }

// Report is one probe's outcome over the whole tree.
type Report struct {
	Point     string   `json:"point"`
	Func      string   `json:"func"`
	Off       uint64   `json:"off"`
	Addr      Hex      `json:"addr"` // in the first process it was installed in
	Want      Mode     `json:"want"`
	Mode      Mode     `json:"mode"`
	Displaced int      `json:"displaced"`
	Reasons   []string `json:"reasons"`
	Details   []string `json:"details"`
	// Installs counts the processes it was planted in; Hits the hits in all
	// of them.
	Installs int    `json:"installs"`
	Hits     uint64 `json:"hits"`
	// Stops counts the tracee stops the probe cost (its int3s and its
	// singlestep slots' int3s).
	Stops uint64 `json:"stops"`
	// Records counts the hit records written (--hits).
	Records uint64 `json:"records"`
}

// Summary is a finished trace.
type Summary struct {
	Probes    []Report `json:"probes"`
	Status    int      `json:"status"`
	Detached  bool     `json:"detached"`
	Threads   int      `json:"threads"`
	Processes int      `json:"processes"`
	// Dropped counts jump hits not recorded because the ring was full
	// (kboost did not drain it fast enough); Lost, records overwritten
	// before kboost read them or never completed (a tracee killed in the
	// middle of writing one).
	Dropped uint64   `json:"dropped"`
	Lost    uint64   `json:"lost"`
	Errors  []string `json:"errors,omitempty"`
}

func writePlan(w io.Writer, asJSON bool, pid int, t Target, s *Site) {
	if asJSON {
		b, _ := json.Marshal(struct {
			Pid int `json:"pid"`
			Target
			Addr      Hex      `json:"addr"`
			Want      Mode     `json:"want"`
			Mode      Mode     `json:"mode"`
			Displaced int      `json:"displaced"`
			Reasons   []string `json:"reasons"`
			Details   []string `json:"details"`
		}{pid, t, Hex(s.Addr), s.Want, s.Mode, s.Displaced, nonNil(s.Reasons), nonNil(s.Details)})
		fmt.Fprintf(w, "{\"install\":%s}\n", b)
		return
	}
	fmt.Fprintf(w, "pid %d: %s (%s+%#x) at %#x: %s", pid, t.Point, t.Func, t.Off, s.Addr, s.Mode)
	if s.Mode != s.Want {
		fmt.Fprintf(w, " (asked %s)", s.Want)
	}
	if len(s.Reasons) > 0 {
		fmt.Fprintf(w, " [%s]", strings.Join(s.Reasons, ", "))
	}
	fmt.Fprintln(w)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// WriteSummary prints the per-probe counts (JSON: one {"summary":...} line).
func WriteSummary(w io.Writer, asJSON bool, s Summary) {
	if asJSON {
		for i := range s.Probes {
			s.Probes[i].Reasons, s.Probes[i].Details = nonNil(s.Probes[i].Reasons), nonNil(s.Probes[i].Details)
		}
		b, _ := json.Marshal(s)
		fmt.Fprintf(w, "{\"summary\":%s}\n", b)
		return
	}
	for _, p := range s.Probes {
		mode := p.Mode.String()
		if p.Installs == 0 {
			mode = "not installed"
		}
		fmt.Fprintf(w, "%-24s %-10s hits %d, stops %d", p.Point, mode, p.Hits, p.Stops)
		if p.Records > 0 {
			fmt.Fprintf(w, ", records %d", p.Records)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%d processes, %d threads, status %d", s.Processes, s.Threads, s.Status)
	if s.Dropped+s.Lost > 0 {
		fmt.Fprintf(w, ", %d hit records dropped (ring full), %d lost", s.Dropped, s.Lost)
	}
	if s.Detached {
		fmt.Fprint(w, ", detached")
	}
	fmt.Fprintln(w)
	for _, e := range s.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}

// HitRecord is one hit (--hits): the probe, where it ran, the probe's
// record count so far and, with --args, the argument registers.
type HitRecord struct {
	Point string `json:"point"`
	Pid   int    `json:"pid"`
	// Tid is 0 where kboost does not know the thread (a jump hit of a
	// thread whose thread pointer it never saw).
	Tid int    `json:"tid,omitempty"`
	N   uint64 `json:"n"`
	// Thread is the thread pointer (fs base) a jump trampoline read.
	Thread Hex   `json:"thread,omitempty"`
	Args   []Hex `json:"args,omitempty"`
}

// writeHit writes one hit record.
func writeHit(w io.Writer, asJSON bool, h HitRecord) {
	if asJSON {
		b, _ := json.Marshal(h)
		fmt.Fprintf(w, "{\"hit\":%s}\n", b)
		return
	}
	fmt.Fprintf(w, "hit %s pid %d", h.Point, h.Pid)
	if h.Tid != 0 {
		fmt.Fprintf(w, " tid %d", h.Tid)
	}
	fmt.Fprintf(w, " #%d", h.N)
	if len(h.Args) > 0 {
		fmt.Fprint(w, " args")
		for _, a := range h.Args {
			fmt.Fprintf(w, " %#x", uint64(a))
		}
	}
	fmt.Fprintln(w)
}
