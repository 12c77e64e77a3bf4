package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/jsonv"
	"github.com/spf13/cobra"
)

func newExplainCmd(s Streams) *cobra.Command {
	var archName, policy, addrStr, slotStr, format string
	var preempt ynFlag
	var jsonOut, post, words bool
	cmd := &cobra.Command{
		Use:   "explain HEX",
		Short: "One instruction, step by step: fields, each kernel rule tried, the verdict",
		Example: `  kboost explain 9c
  kboost explain 48 8b 05 10 00 00 00 --slot 0xffffffffa0000000 --addr 0xffffffff81000000
  kboost explain --preemption n 48 89 e5
  kboost explain --arch arm64 3f 23 03 d5              (bytes in memory order)
  kboost explain --arch arm64 --words d503233f         (one A64 word, as objdump prints it)
  kboost explain --arch arm64 --policy boost-arm64 --slot 0xffff800008000000 0xaa0103e0
  kboost explain --arch arm --words e52de004           (one A32 word; policy linux-6.1-arm)
  kboost explain --arch thumb --words e92d 4ff0        (Thumb halfwords as objdump prints them)`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			arch, err := decode.LookupArch(archName)
			if err != nil {
				return &UsageError{err.Error()}
			}
			if err := checkFormat(format, jsonOut, "text", "svg", "html"); err != nil {
				return err
			}
			code, err := hexArgs(arch, args, words, false)
			if err != nil {
				return err
			}
			addr, err := archAddr(cmd, "addr", addrStr, arch.TextAddr)
			if err != nil {
				return err
			}
			pol, err := pickPolicy(policy, arch)
			if err != nil {
				return err
			}
			env := pol.DefaultEnv()
			env.Mode = arch.Mode
			if slotStr != "" {
				if env.SlotAddr, err = parseAddr(slotStr); err != nil {
					return err
				}
			}
			preempt.apply(&env.Config.Preemption)
			env.Config.PostHandler = post
			inst, derr := arch.DecodeOne(code, addr)
			if err := inputErr(arch, derr); err != nil {
				return err
			}
			steps, d := pol.Explain(&inst, env)
			if format != "text" {
				return writeExplainPicture(s.Out, explainPicture(arch, pol, env, &inst, derr, steps, &d), format)
			}
			w := bufio.NewWriter(s.Out)
			defer w.Flush()
			if jsonOut {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(explainJSON(arch, pol, env, &inst, derr, steps, &d))
			}
			fmt.Fprintf(w, "%s   %s   (%s, policy %s, config: %s)\n\n", appendHexBytes(nil, inst.Bytes()), asmOf(&inst, derr), arch.Name, pol.Name, strings.Join(env.Config.Flags(), " "))
			if derr != nil {
				fmt.Fprintf(w, "decode: %v\n\n", derr)
			}
			fmt.Fprintln(w, "fields")
			for _, kv := range fieldList(&inst) {
				fmt.Fprintf(w, "  %-10s %s\n", kv[0], kv[1])
			}
			fmt.Fprintln(w, "\nrules, in the kernel's order")
			for i, st := range steps {
				fmt.Fprintf(w, "  %2d. %s\n", i+1, st)
			}
			v := d.Verdict.String()
			if d.Verdict == boost.Reject {
				v += " (" + d.Errno.String() + ")"
			}
			fmt.Fprintf(w, "\nverdict: %s\n", v)
			if sb := d.SlotBytes(); len(sb) > 0 {
				fmt.Fprintf(w, "slot:    %s\n", appendHexBytes(nil, sb))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&archName, "arch", "x86-64", "instruction set: x86-64, i386, arm64, arm or thumb (HEX is bytes in memory order; see --words)")
	fl.StringVar(&policy, "policy", "", policyUsage)
	fl.StringVar(&addrStr, "addr", "", "address of the instruction (default, by --arch: "+archAddrs(func(a *decode.Arch) uint64 { return a.TextAddr })+")")
	fl.StringVar(&slotStr, "slot", "", "address of the kprobe slot (for RIP-relative rebasing)")
	ynVar(fl, &preempt, "preemption", preemptionUsage)
	addWordsFlag(fl, &words)
	fl.BoolVar(&post, "post-handler", false, "the probe has a post_handler")
	fl.BoolVar(&jsonOut, "json", false, "machine-readable output")
	addFormatFlag(fl, &format, "text, svg (fields over bytes, the slot) or html (also the rules in the kernel's order)", "text", "svg", "html")
	return cmd
}

// explainRecord is `kboost explain --json` (schemas/explain.json).
type explainRecord struct {
	Arch     string         `json:"arch"`
	Policy   string         `json:"policy"`
	Config   []string       `json:"config"`
	Addr     jsonv.Addr     `json:"addr"`
	Bytes    jsonv.Bytes    `json:"bytes"`
	Len      int            `json:"len"`
	Asm      string         `json:"asm"`
	Error    string         `json:"error,omitempty"`
	Fields   map[string]any `json:"fields"`
	Steps    []explainStep  `json:"steps"`
	Verdict  string         `json:"verdict"`
	Errno    string         `json:"errno,omitempty"`
	Reasons  []string       `json:"reasons"`
	Details  []string       `json:"details"`
	CanBoost bool           `json:"can_boost"`
	Emulated bool           `json:"emulated"`
	SlotAddr *jsonv.Addr    `json:"slot_addr,omitempty"`
	Slot     jsonv.Bytes    `json:"slot,omitempty"`
	SlotLen  int            `json:"slot_len"`
}

// explainStep is one rule tried: its id (reason), outcome and text (detail).
type explainStep struct {
	Reason  string `json:"reason"`
	Outcome string `json:"outcome"`
	Detail  string `json:"detail"`
}

func explainJSON(arch *decode.Arch, pol *boost.Policy, env *boost.Env, inst *decode.Inst, derr error, steps []boost.Step, d *boost.Decision) *explainRecord {
	r := &explainRecord{Arch: arch.Name, Policy: pol.Name, Config: env.Config.Flags(), Addr: jsonv.Addr(inst.Addr), Bytes: inst.Bytes(), Len: inst.Len,
		Asm: asmOf(inst, derr), Fields: instFields(inst), Verdict: d.Verdict.String(), Reasons: d.ReasonIDs(), Details: reasonTexts(d),
		CanBoost: d.CanBoost, Emulated: d.Emulated, Slot: d.SlotBytes(), SlotLen: d.SlotLen, Steps: []explainStep{}}
	if derr != nil {
		r.Error = derr.Error()
	}
	if d.Verdict == boost.Reject {
		r.Errno = d.Errno.String()
	}
	if len(r.Slot) > 0 {
		a := jsonv.Addr(env.SlotAddr)
		r.SlotAddr = &a
	}
	for _, st := range steps {
		r.Steps = append(r.Steps, explainStep{Reason: st.Rule, Outcome: st.Outcome.String(), Detail: st.Text})
	}
	return r
}

func asmOf(inst *decode.Inst, derr error) string {
	if derr != nil {
		return "(bad)"
	}
	return decode.Format(inst, nil)
}

func fieldList(i *decode.Inst) [][2]string {
	var f [][2]string
	for _, x := range i.Fields() {
		if x.Text != "" {
			f = append(f, [2]string{x.Name, x.Text})
		}
	}
	return f
}

func instFields(i *decode.Inst) map[string]any {
	m := map[string]any{}
	for _, kv := range fieldList(i) {
		m[kv[0]] = kv[1]
	}
	return m
}

// policiesRecord is `kboost policies --json` (schemas/policies.json).
type policiesRecord struct {
	Policies []policyJSON `json:"policies"`
	Rules    []ruleJSON   `json:"rules"`
}

type policyJSON struct {
	Name     string   `json:"name"`
	Title    string   `json:"title"`
	Source   string   `json:"source"`
	Arches   []string `json:"arches"`   // as --arch spells them, the default first
	Defaults []string `json:"defaults"` // the configuration assumed (CONFIG_ names without the prefix)
}

type ruleJSON struct {
	ID       string   `json:"id"`
	Desc     string   `json:"desc"`
	Where    string   `json:"where"`
	Policies []string `json:"policies"`
}

func policiesJSON() *policiesRecord {
	out := &policiesRecord{Policies: []policyJSON{}, Rules: []ruleJSON{}}
	for _, p := range boost.Policies() {
		pj := policyJSON{Name: p.Name, Title: p.Title, Source: p.Source, Arches: []string{}, Defaults: append([]string{}, p.Defaults.Flags()...)}
		for _, m := range p.Modes {
			pj.Arches = append(pj.Arches, archName(m))
		}
		out.Policies = append(out.Policies, pj)
	}
	for _, r := range boost.Rules() {
		out.Rules = append(out.Rules, ruleJSON{ID: r.ID, Desc: r.Desc, Where: r.Where, Policies: strings.Split(r.Policies, ",")})
	}
	return out
}

func newPoliciesCmd(s Streams) *cobra.Command {
	var jsonOut, rules bool
	cmd := &cobra.Command{
		Use:   "policies",
		Short: "List the kernel policies and the rules they apply",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			w := bufio.NewWriter(s.Out)
			defer w.Flush()
			if jsonOut {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(policiesJSON())
			}
			for _, p := range boost.Policies() {
				fmt.Fprintf(w, "%-20s %s\n%-20s source: %s; defaults: %s\n", p.Name, p.Title, "", p.Source, strings.Join(p.Defaults.Flags(), " "))
			}
			if rules {
				fmt.Fprintln(w, "\nrules")
				for _, r := range boost.Rules() {
					fmt.Fprintf(w, "  %-36s %s\n  %-36s (%s; %s)\n", r.ID, r.Desc, "", r.Where, r.Policies)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "machine-readable output (includes the rules)")
	cmd.Flags().BoolVar(&rules, "rules", false, "also list every rule id with where it lives in the kernel")
	return cmd
}
