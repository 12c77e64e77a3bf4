package cli

import (
	"fmt"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// ynFlag is a y/n flag that may be left unset (--preemption): every
// command spells it the same, y or n (yes/no, true/false also read).
type ynFlag struct{ set, v bool }

// ynVar defines a y/n flag on f.
func ynVar(f *pflag.FlagSet, p *ynFlag, name, usage string) { f.Var(p, name, usage) }

func (f *ynFlag) String() string {
	switch {
	case !f.set:
		return ""
	case f.v:
		return "y"
	}
	return "n"
}

func (f *ynFlag) Type() string { return "y|n" }

func (f *ynFlag) Set(s string) error {
	switch s {
	case "y", "yes", "true":
		f.set, f.v = true, true
	case "n", "no", "false":
		f.set, f.v = true, false
	default:
		return fmt.Errorf("want y or n")
	}
	return nil
}

// apply sets *p to the flag's value when it was given.
func (f *ynFlag) apply(p *bool) {
	if f.set {
		*p = f.v
	}
}

// preemptionUsage is the help of --preemption, the same in every command.
const preemptionUsage = "CONFIG_PREEMPTION of the modelled kernel, y or n (default: the policy's, or the kernel file's .config)"

// valuesKey is the flag annotation that lists a flag's values for shell
// completion (setValues); flags named in completions get theirs there.
const valuesKey = "kboost_values"

// setValues records the values flag name of f takes, for completion.
func setValues(f *pflag.FlagSet, name string, values ...string) {
	f.SetAnnotation(name, valuesKey, values)
}

// completions are the values of the flags every command spells the same;
// policy names follow --arch when it is given.
var completions = map[string]func(cmd *cobra.Command) []string{
	"arch": func(*cobra.Command) []string {
		var n []string
		for _, a := range decode.Arches {
			n = append(n, a.Name)
		}
		return n
	},
	"policy": func(cmd *cobra.Command) []string {
		var arch *decode.Arch
		if f := cmd.Flags().Lookup("arch"); f != nil && f.Changed {
			arch, _ = decode.LookupArch(f.Value.String())
		}
		var n []string
		for _, p := range boost.Policies() {
			if arch == nil || p.Supports(arch.Mode) {
				n = append(n, p.Name)
			}
		}
		return n
	},
	"preemption": func(*cobra.Command) []string { return []string{"y", "n"} },
	"exec":       func(*cobra.Command) []string { return kernelsim.ExecModeNames() },
	"class":      func(*cobra.Command) []string { return a64ClassNames() },
	"map":        func(*cobra.Command) []string { return []string{"one", "0f", "0f38", "0f3a"} },
	"path":       func(*cobra.Command) []string { return []string{"boost", "single-step", "emulate"} },
}

// registerCompletions gives every flag of every command under root its value
// completion: the completions table by name, or the flag's setValues list.
// A command's own policy file (monitor --policy-file) is a file: left to the
// shell.
func registerCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { registerFlag(c, f) })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { registerFlag(c, f) })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

func registerFlag(c *cobra.Command, f *pflag.Flag) {
	var values func(cmd *cobra.Command) []string
	if vs, ok := f.Annotations[valuesKey]; ok {
		values = func(*cobra.Command) []string { return vs }
	} else if fn, ok := completions[f.Name]; ok && f.Value.Type() != "bool" {
		values = fn
	}
	if values == nil {
		return
	}
	c.RegisterFlagCompletionFunc(f.Name, func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, v := range values(cmd) {
			if strings.HasPrefix(v, toComplete) {
				out = append(out, v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}

// addExecFlag adds --exec (sim and fuzz): what executes the cases.
func addExecFlag(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "exec", "auto", "what executes the cases: auto (the CPU where this kernel runs the mode's code, else its qemu-user emulator), cpu or qemu")
	cmd.RegisterFlagCompletionFunc("exec", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return kernelsim.ExecModeNames(), cobra.ShellCompDirectiveNoFileComp
	})
}
