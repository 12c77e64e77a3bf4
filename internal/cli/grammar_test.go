package cli

import (
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestOneGrammar: a flag name means one type in every command that has it
// (--preemption y|n, --seed uint64, --func repeatable...), and a few names
// that meant different things in different commands are gone.
func TestOneGrammar(t *testing.T) {
	root := NewRoot(Streams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}})
	types := map[string]map[string][]string{} // flag -> type -> commands
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if types[f.Name] == nil {
				types[f.Name] = map[string][]string{}
			}
			types[f.Name][f.Value.Type()] = append(types[f.Name][f.Value.Type()], c.CommandPath())
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	// --force is a bool everywhere (ask the kernel anyway); sim's hit path
	// is --path.
	for name, byType := range types {
		if len(byType) > 1 {
			t.Errorf("--%s has %d types: %v", name, len(byType), byType)
		}
	}
	for name, want := range map[string]string{"preemption": "y|n", "seed": "uint64", "func": "stringArray", "trials": "N", "force": "bool", "policy": "string"} {
		for typ := range types[name] {
			if typ != want {
				t.Errorf("--%s is %s, want %s", name, typ, want)
			}
		}
	}
	if c := types["policy"]["string"]; slicesHas(c, "kboost monitor") {
		t.Errorf("monitor --policy is a file there, a kprobes policy elsewhere")
	}
	// a y/n value is read as one, not as HEX
	_, stderr, code := run(t, "sim", "--preemption", "maybe", "9c")
	if code != ExitUsage || !strings.Contains(stderr, "want y or n") {
		t.Errorf("sim --preemption maybe: exit %d %q", code, stderr)
	}
}

func slicesHas(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestVersion: `kboost version` and `kboost --version` print the same line,
// naming the module version and the Go toolchain the binary was built with.
func TestVersion(t *testing.T) {
	a, _, c1 := run(t, "version")
	b, _, c2 := run(t, "--version")
	if c1 != 0 || c2 != 0 || a != b || !strings.HasPrefix(a, "kboost ") || !strings.Contains(a, runtime.Version()) {
		t.Errorf("version %q (exit %d), --version %q (exit %d)", a, c1, b, c2)
	}
}

// TestFlagCompletion: flag values complete in the shell (cobra's __complete
// protocol): policies (only those of --arch when given), arches, formats
// of the command, y/n, exec modes, classes.
func TestFlagCompletion(t *testing.T) {
	complete := func(args ...string) []string {
		out, _, code := run(t, append([]string{"__complete"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		var vs []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, ":") {
				vs = append(vs, l)
			}
		}
		sort.Strings(vs)
		return vs
	}
	var arm64Pols []string
	for _, p := range boost.Policies() {
		if strings.HasSuffix(p.Name, "-arm64") {
			arm64Pols = append(arm64Pols, p.Name)
		}
	}
	sort.Strings(arm64Pols)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "--arch", ""}, "arm arm64 i386 thumb x86-64"},
		{[]string{"explain", "--arch", "arm64", "--policy", ""}, strings.Join(arm64Pols, " ")},
		{[]string{"audit", "--policy", "linux-6.1"}, "linux-6.1 linux-6.1-arm linux-6.1-arm64 linux-6.1-thumb linux-6.12 linux-6.12-arm64"},
		{[]string{"audit", "--format", ""}, "html text"},
		{[]string{"sim", "--format", ""}, "html svg text"},
		{[]string{"sim", "--preemption", ""}, "n y"},
		{[]string{"fuzz", "--exec", ""}, "auto cpu qemu"},
		{[]string{"opcodes", "--class", "s"}, "sme sve system"},
		{[]string{"vm", "verify", "--arch", ""}, "arm arm64 x86-64"},
	} {
		if got := strings.Join(complete(c.args...), " "); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
}
