package kimage

import (
	"bytes"
	"os"
	"testing"

	"github.com/kboost/kboost/kimage/internal/cpuspec"
)

// cpuSpecFiles are the spec files of each generated table, as named by the
// generate directives of a64_alt.go and x86_features.go.
var cpuSpecFiles = map[string][]string{
	"a64_cpucaps.go":     {"spec/a64-cpucaps-6.1.spec", "spec/a64-cpucaps-6.12.spec", "spec/a64-cpucaps-7.2.spec"},
	"x86_cpufeatures.go": {"spec/x86-cpufeatures-6.1.spec", "spec/x86-cpufeatures-6.12.spec", "spec/x86-cpufeatures-7.2.spec"},
}

// TestCPUTablesFresh fails when a generated CPU table does not match what
// the generator makes from its spec files: run `go generate ./kimage`.
func TestCPUTablesFresh(t *testing.T) {
	for out, specs := range cpuSpecFiles {
		want, err := cpuspec.GenerateFiles(specs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `go generate ./kimage`", out)
		}
	}
}
