package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is kboost's version: the module version the binary was built as
// (a tag with 'go install ...@vX', "(devel)" from a checkout), the VCS
// revision and time when the build recorded them (a "+dirty" revision had
// uncommitted changes), and the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information) " + runtime.Version()
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		v += fmt.Sprintf(" revision %s%s", rev, dirty)
		if when != "" {
			v += " (" + when + ")"
		}
	}
	return v + " " + runtime.Version()
}

func newVersionCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print kboost's version (module version, VCS revision, Go version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(s.Out, "kboost", version())
			return err
		},
	}
}
