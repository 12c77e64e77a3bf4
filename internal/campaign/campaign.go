package campaign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"

	"github.com/kboost/kboost/kernelsim/fuzz"
)

// Version is the findings-file format's version. 2: findings in kboost's JSON vocabulary (spaced bytes, reasons and
// details, trials and diverged_trials counts); version 1 files are refused.
const Version = 2

// Record kinds (the "record" key; finding lines have none).
const (
	RecCampaign   = "campaign"
	RecCheckpoint = "checkpoint"
)

// Header is a findings file's first line: what determines the case
// stream and its verdicts.
type Header struct {
	Record  string `json:"record"` // "campaign"
	Version int    `json:"version"`
	Arch    string `json:"arch"`
	Policy  string `json:"policy"`
	Seed    uint64 `json:"seed"`
	Trials  int    `json:"trials"`
	// Cases is the campaign's case count (-n; 0: bounded by time only).
	Cases       int    `json:"cases_total"`
	BlockSize   int    `json:"block_size"`
	Shard       string `json:"shard"` // "K/N"
	Samples     string `json:"samples_from"`
	CaseTimeout string `json:"case_timeout,omitempty"`
	// Merged lists the shards a `kboost merge` output combines (Shard is
	// then empty).
	Merged []string `json:"merged_shards,omitempty"`
}

// Checkpoint records a campaign's progress: every block of its shard
// below NextBlock has run, and Counts are their counts.
type Checkpoint struct {
	Record    string     `json:"record"` // "checkpoint"
	NextBlock uint64     `json:"next_block"`
	Counts    fuzz.Stats `json:"counts"`
}

// Summary is the `kboost fuzz --json` summary (and a merge of them).
type Summary struct {
	fuzz.Stats
	Arch        string   `json:"arch"`
	Policy      string   `json:"policy"`
	Seed        uint64   `json:"seed"`
	Trials      int      `json:"trials"`
	Samples     string   `json:"samples_from"`
	Emulator    string   `json:"emulator,omitempty"`
	Interrupted bool     `json:"interrupted"`
	Shard       string   `json:"shard,omitempty"`
	Merged      []string `json:"merged_shards,omitempty"`
}

// shards returns the shards a header covers.
func (h *Header) shards() []string {
	if len(h.Merged) > 0 {
		return h.Merged
	}
	return []string{h.Shard}
}

// Writer appends records to a findings file, each with one write call.
type Writer struct{ f *os.File }

// Create starts a findings file with its header.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	h.Record, h.Version = RecCampaign, Version
	w := &Writer{f}
	if err := w.put(h); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Reopen opens a findings file to continue it after s (Load): the file is
// cut just after s's last checkpoint.
func Reopen(path string, s *State) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(s.End); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(s.End, 0); err != nil {
		f.Close()
		return nil, err
	}
	return &Writer{f}, nil
}

func (w *Writer) put(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.f.Write(append(b, '\n'))
	return err
}

// Finding appends a finding.
func (w *Writer) Finding(fd *fuzz.Finding) error { return w.put(fd) }

// Checkpoint appends a checkpoint.
func (w *Writer) Checkpoint(next uint64, st *fuzz.Stats) error {
	return w.put(Checkpoint{Record: RecCheckpoint, NextBlock: next, Counts: *st})
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

// State is what a findings file holds up to its last checkpoint.
type State struct {
	Path   string
	Header Header
	// Last is the last checkpoint (nil: none; the campaign restarts at
	// its first block).
	Last *Checkpoint
	// Findings are the findings before Last.
	Findings []fuzz.Finding
	// End is the offset just past Last (or the header).
	End int64
	// Dropped counts the lines after Last: findings of blocks that had not
	// finished, and an unterminated line.
	Dropped int
}

// Keys returns the keys of s's findings.
func (s *State) Keys() []string {
	ks := make([]string, len(s.Findings))
	for i := range s.Findings {
		ks[i] = s.Findings[i].Key
	}
	return ks
}

// Load reads a findings file.
func Load(path string) (*State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, data)
}

func parse(path string, data []byte) (*State, error) {
	s := &State{Path: path}
	var pending []fuzz.Finding
	off, line := 0, 0
	for off < len(data) {
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 {
			s.Dropped++ // a torn last line
			break
		}
		b := data[off : off+nl]
		off += nl + 1
		line++
		var rec struct {
			Record string `json:"record"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: not a JSON record: %v", path, line, err)
		}
		switch {
		case line == 1 && rec.Record != RecCampaign:
			return nil, fmt.Errorf("%s: not a kboost fuzz findings file (no campaign header: written by 'kboost fuzz --out' of an older kboost, or not by kboost)", path)
		case rec.Record == RecCampaign:
			if line != 1 {
				return nil, fmt.Errorf("%s:%d: a second campaign header", path, line)
			}
			if err := json.Unmarshal(b, &s.Header); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, line, err)
			}
			if s.Header.Version != Version {
				return nil, fmt.Errorf("%s: findings file version %d, this kboost reads version %d only (version 1 predates kboost's JSON vocabulary: rerun the campaign with this kboost)", path, s.Header.Version, Version)
			}
			s.End = int64(off)
		case rec.Record == RecCheckpoint:
			var cp Checkpoint
			if err := json.Unmarshal(b, &cp); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, line, err)
			}
			s.Last, s.End = &cp, int64(off)
			s.Findings, pending = append(s.Findings, pending...), pending[:0]
		case rec.Record == "":
			var fd fuzz.Finding
			if err := json.Unmarshal(b, &fd); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, line, err)
			}
			pending = append(pending, fd)
		default:
			return nil, fmt.Errorf("%s:%d: unknown record %q", path, line, rec.Record)
		}
	}
	if line == 0 {
		return nil, fmt.Errorf("%s: empty findings file", path)
	}
	s.Dropped += len(pending)
	return s, nil
}

// Merged is the combination of several shards' findings files.
type Merged struct {
	Header   Header
	Counts   fuzz.Stats
	Findings []fuzz.Finding
	// NextBlock: every block below it has run in every shard.
	NextBlock uint64
}

// Merge combines findings files of one campaign (its shards, or merges of
// them): the counts are summed, the findings keyed by ID (a finding met by
// several shards is kept once: the one from the earliest block, which is
// the one an unsharded run reports) and ordered by block, then as found.
func Merge(states []*State) (*Merged, error) {
	if len(states) == 0 {
		return nil, fmt.Errorf("nothing to merge")
	}
	h0 := states[0].Header
	m := &Merged{Header: h0, NextBlock: ^uint64(0)}
	m.Header.Shard, m.Header.Merged = "", nil
	seen := map[string]string{}
	type at struct {
		fd  fuzz.Finding
		ord int
	}
	byID := map[string]at{}
	ord := 0
	for _, s := range states {
		h := s.Header
		if h.Arch != h0.Arch || h.Policy != h0.Policy || h.Seed != h0.Seed || h.Trials != h0.Trials ||
			h.Cases != h0.Cases || h.BlockSize != h0.BlockSize || h.Samples != h0.Samples || h.CaseTimeout != h0.CaseTimeout {
			return nil, fmt.Errorf("%s and %s are not shards of one campaign (arch, policy, seed, trials, -n, case timeout and samples must agree): %+v vs %+v",
				states[0].Path, s.Path, campaignOf(&h0), campaignOf(&h))
		}
		for _, sh := range h.shards() {
			if p, ok := seen[sh]; ok {
				return nil, fmt.Errorf("shard %s is in both %s and %s", sh, p, s.Path)
			}
			seen[sh] = s.Path
			m.Header.Merged = append(m.Header.Merged, sh)
		}
		if s.Last != nil {
			m.Counts.Add(&s.Last.Counts)
			m.NextBlock = min(m.NextBlock, s.Last.NextBlock)
		} else {
			m.NextBlock = 0
		}
		for _, fd := range s.Findings {
			ord++
			if o, ok := byID[fd.ID]; !ok || fd.Block < o.fd.Block {
				byID[fd.ID] = at{fd, ord}
			}
		}
	}
	sort.Slice(m.Header.Merged, func(i, j int) bool { return shardLess(m.Header.Merged[i], m.Header.Merged[j]) })
	all := make([]at, 0, len(byID))
	for _, a := range byID {
		all = append(all, a)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].fd.Block != all[j].fd.Block {
			return all[i].fd.Block < all[j].fd.Block
		}
		return all[i].ord < all[j].ord
	})
	for _, a := range all {
		m.Findings = append(m.Findings, a.fd)
	}
	m.Counts.FindingKeys = len(m.Findings)
	return m, nil
}

func campaignOf(h *Header) string {
	return fmt.Sprintf("%s/%s seed %d trials %d n %d samples %q", h.Arch, h.Policy, h.Seed, h.Trials, h.Cases, h.Samples)
}

func shardLess(a, b string) bool {
	var ak, an, bk, bn int
	fmt.Sscanf(a, "%d/%d", &ak, &an)
	fmt.Sscanf(b, "%d/%d", &bk, &bn)
	if an != bn {
		return an < bn
	}
	return ak < bk
}

// Write writes m as a findings file (header, findings, one checkpoint).
func (m *Merged) Write(w interface{ Write([]byte) (int, error) }) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	h := m.Header
	h.Record, h.Version = RecCampaign, Version
	enc.Encode(h)
	for i := range m.Findings {
		enc.Encode(&m.Findings[i])
	}
	enc.Encode(Checkpoint{Record: RecCheckpoint, NextBlock: m.NextBlock, Counts: m.Counts})
	_, err := w.Write(buf.Bytes())
	return err
}

// Summary returns the merged campaign's summary.
func (m *Merged) Summary() Summary {
	h := &m.Header
	return Summary{Stats: m.Counts, Arch: h.Arch, Policy: h.Policy, Seed: h.Seed, Trials: h.Trials, Samples: h.Samples, Merged: h.Merged}
}

// MergeSummaries sums `kboost fuzz --json` summaries of one campaign's
// shards. Their distinct_findings are summed too (a finding met by two
// shards counts twice): merging the findings files counts them exactly.
func MergeSummaries(paths []string, ss []Summary) (Summary, error) {
	if len(ss) == 0 {
		return Summary{}, fmt.Errorf("nothing to merge")
	}
	out := ss[0]
	out.Stats = fuzz.Stats{}
	out.Shard, out.Merged, out.Interrupted = "", nil, false
	seen := map[string]string{}
	for i := range ss {
		s := &ss[i]
		if s.Arch != out.Arch || s.Policy != out.Policy || s.Seed != out.Seed || s.Trials != out.Trials || s.Samples != out.Samples {
			return Summary{}, fmt.Errorf("%s and %s are not shards of one campaign (arch, policy, seed, trials and samples must agree)", paths[0], paths[i])
		}
		shs := s.Merged
		if len(shs) == 0 {
			shs = []string{s.Shard}
			if s.Shard == "" {
				shs = []string{"0/1"}
			}
		}
		for _, sh := range shs {
			if p, ok := seen[sh]; ok {
				return Summary{}, fmt.Errorf("shard %s is in both %s and %s", sh, p, paths[i])
			}
			seen[sh] = paths[i]
			out.Merged = append(out.Merged, sh)
		}
		out.Stats.Add(&s.Stats)
		out.Interrupted = out.Interrupted || s.Interrupted
	}
	sort.Slice(out.Merged, func(i, j int) bool { return shardLess(out.Merged[i], out.Merged[j]) })
	out.Merged = slices.Compact(out.Merged)
	return out, nil
}

// Last0 returns the last checkpoint, or the start of the campaign when
// there is none.
func (s *State) Last0() *Checkpoint {
	if s.Last != nil {
		return s.Last
	}
	return &Checkpoint{Record: RecCheckpoint}
}
