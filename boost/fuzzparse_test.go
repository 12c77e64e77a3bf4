package boost_test

import (
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
)

// FuzzParseConfig: any text either is refused or gives a Config, and where
// kimage's .config parser (the one audits read kernels' configs with) also
// accepts it, both parsers give the same Config.
func FuzzParseConfig(f *testing.F) {
	f.Add("CONFIG_PREEMPTION=y\n# CONFIG_X86_KERNEL_IBT is not set\nCONFIG_OPTPROBES=y\nCONFIG_SMP=\"y\"\n")
	f.Add("CONFIG_MITIGATION_RETPOLINE=y\r\n\n  CONFIG_DYNAMIC_FTRACE=m\n")
	f.Add("not a config")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := boost.ParseConfig(text)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: empty error", text)
			}
			return
		}
		kc, kerr := kimage.ParseKConfig([]byte(text))
		if kerr != nil {
			return
		}
		if k := boost.ConfigFromFunc(kc.Value); k != c {
			t.Fatalf("%q: boost.ParseConfig %+v, kimage.ParseKConfig %+v", text, c, k)
		}
	})
}

// FuzzParseNames: ParseVerdict and Lookup accept exactly the names that
// Verdict.String and Policy.Name print.
func FuzzParseNames(f *testing.F) {
	for _, s := range []string{"boost", "singlestep", "reject", "linux-6.1", "uprobes-x86", "linux-6.1-arm64", "", "Boost"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := boost.ParseVerdict(s); err == nil && v.String() != s {
			t.Fatalf("ParseVerdict(%q) = %v", s, v)
		} else if err != nil && err.Error() == "" {
			t.Fatalf("ParseVerdict(%q): empty error", s)
		}
		if p, err := boost.Lookup(s); err == nil && p.Name != s {
			t.Fatalf("Lookup(%q) = %s", s, p.Name)
		} else if err != nil && err.Error() == "" {
			t.Fatalf("Lookup(%q): empty error", s)
		}
	})
}
