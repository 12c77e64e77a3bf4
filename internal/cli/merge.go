package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/kboost/kboost/internal/campaign"
	"github.com/spf13/cobra"
)

func newMergeCmd(s Streams) *cobra.Command {
	var (
		out     string
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "merge FILE...",
		Short: "Combine the findings files or summaries of a fuzz campaign's shards",
		Long: `Combine the findings files ('kboost fuzz --out') of one campaign's shards
('--shard K/N', or earlier merges) into one findings file: the counts of their
last checkpoints summed, the findings keyed by their content hash ("id"), a
finding met by several shards kept once (from the earliest block, as an
unsharded run reports it), ordered by block. Findings after a file's last
checkpoint (blocks that had not finished: resume that shard first) are left
out, with a note.

With --json, print the merged campaign's summary (the shape of 'kboost fuzz
--json') instead of the findings (which then go only to --out, if given).

FILEs may instead be 'kboost fuzz --json' summaries: their counts are summed
(distinct_findings too: a finding met by two shards counts twice there; merge
the findings files for the exact number). Or 'kboost audit --summary --json'
summaries of an audit's shards: their counts are summed into the whole
audit's summary.

The shards must be of one campaign (arch, policy, seed, trials, -n and samples
agree) and each given once. Audit shards ('kboost audit --shard K/N') need no
merge: their outputs together are the audit's records ('cat').`,
		Example: `  kboost merge shard-*.jsonl > findings.jsonl
  kboost merge --json -o findings.jsonl shard-*.jsonl
  kboost merge summary-*.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var (
				states []*campaign.State
				sums   []campaign.Summary
				audits []auditSum
			)
			for _, p := range args {
				if err := inputFile("", p); err != nil {
					return err
				}
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				if as, ok := readAuditSummary(data); ok {
					audits = append(audits, as)
					continue
				}
				if isSummary(data) {
					var sm campaign.Summary
					if err := json.Unmarshal(data, &sm); err != nil {
						return fmt.Errorf("%s: %v", p, err)
					}
					sums = append(sums, sm)
					continue
				}
				st, err := campaign.Load(p)
				if err != nil {
					return err
				}
				if st.Dropped > 0 {
					fmt.Fprintf(s.Err, "kboost merge: %s: %d lines after its last checkpoint left out (unfinished blocks: 'kboost fuzz --resume %s' completes them)\n", p, st.Dropped, p)
				}
				states = append(states, st)
			}
			kinds := 0
			for _, n := range []int{len(states), len(sums), len(audits)} {
				if n > 0 {
					kinds++
				}
			}
			if kinds > 1 {
				return usagef("give one kind of file: fuzz findings files, fuzz --json summaries or audit --summary --json summaries")
			}
			if len(audits) > 0 {
				if out != "" {
					return usagef("-o: audit summaries merge into a summary (printed); -o takes merged findings files")
				}
				total, secs := newSummary(), 0.0
				var notes []string
				total.arch, total.policy = audits[0].s.arch, audits[0].s.policy
				for i, a := range audits {
					if a.s.arch != total.arch || a.s.policy != total.policy {
						return usagef("%s is an audit of %s under %s, %s of %s under %s: merge shards of one audit", args[i], a.s.arch, a.s.policy, args[0], total.arch, total.policy)
					}
					total.merge(a.s)
					secs += a.seconds
					if notes == nil {
						notes = a.notes
					}
				}
				total.write(s.Out, true, time.Duration(secs*float64(time.Second)), notes)
				return nil
			}
			enc := json.NewEncoder(s.Out)
			enc.SetIndent("", "  ")
			if len(sums) > 0 {
				if out != "" {
					return usagef("-o: summaries merge into a summary (printed); -o takes merged findings files")
				}
				sm, err := campaign.MergeSummaries(args, sums)
				if err != nil {
					return err
				}
				return enc.Encode(sm)
			}
			m, err := campaign.Merge(states)
			if err != nil {
				return err
			}
			if out != "" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				if err := m.Write(f); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
			} else if !jsonOut {
				return m.Write(s.Out)
			}
			if jsonOut {
				return enc.Encode(m.Summary())
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the merged findings file here (default: standard output)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the merged summary (as 'kboost fuzz --json')")
	return cmd
}

// isSummary tells a `fuzz --json` summary (one indented object) from a
// findings file (JSON lines, a campaign header first).
func isSummary(data []byte) bool {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	var rec struct {
		Record string `json:"record"`
	}
	return json.Unmarshal(line, &rec) != nil || rec.Record == ""
}

// auditSum is an `audit --summary --json` summary as read back.
type auditSum struct {
	s       *summary
	seconds float64
	notes   []string
}

// readAuditSummary reads an `audit --summary --json` summary.
func readAuditSummary(data []byte) (auditSum, bool) {
	var j struct {
		Arch        string         `json:"arch"`
		Policy      string         `json:"policy"`
		Functions   *int           `json:"functions"`
		Boundaries  *int           `json:"boundaries"`
		Optimizable int            `json:"optimizable"`
		Errors      int            `json:"errors"`
		Seconds     float64        `json:"seconds"`
		Verdicts    map[string]int `json:"verdicts"`
		Errnos      map[string]int `json:"errnos"`
		Rules       map[string]int `json:"rules"`
		Notes       []string       `json:"notes"`
	}
	if json.Unmarshal(data, &j) != nil || j.Functions == nil || j.Boundaries == nil {
		return auditSum{}, false
	}
	s := newSummary()
	s.arch, s.policy = j.Arch, j.Policy
	s.funcs, s.points, s.optimizable, s.errors = *j.Functions, *j.Boundaries, j.Optimizable, j.Errors
	for _, p := range [][2]map[string]int{{s.verdicts, j.Verdicts}, {s.errnos, j.Errnos}, {s.rules, j.Rules}} {
		for k, v := range p[1] {
			p[0][k] += v
		}
	}
	return auditSum{s, j.Seconds, j.Notes}, true
}
