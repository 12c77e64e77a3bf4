package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

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
the findings files for the exact number).

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
			)
			for _, p := range args {
				data, err := os.ReadFile(p)
				if err != nil {
					return err
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
			if len(sums) > 0 && len(states) > 0 {
				return usagef("give findings files or --json summaries, not both")
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
