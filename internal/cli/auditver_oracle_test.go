package cli

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm"
)

// kboost audit of Debian's 6.1 packages with no --policy reads the kernel's
// version and picks the policy, and says so; --returns ret on the arm64
// kernel (no return thunks) is a note, not an error.
func TestOracleAuditPicksPolicyByVersion(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (downloads the Debian kernels once)")
	}
	for _, c := range []struct {
		meta, policy string
		args         []string
	}{
		{"linux-image-amd64", "linux-6.1", nil},
		{"linux-image-arm64", "linux-6.1-arm64", []string{"--returns", "ret"}},
	} {
		ctx := context.Background()
		deb, err := kimage.FetchDebianKernel(ctx, c.meta)
		if err != nil {
			t.Fatal(err)
		}
		ks, err := vm.DebianKallsyms(ctx, c.meta)
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{"audit", "--json", "--summary", "--func", "vfs_read", deb, "--symbols", ks}, c.args...)
		out, stderr, code := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var sum struct {
			Policy string   `json:"policy"`
			Notes  []string `json:"notes"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
			t.Fatalf("%s: %v", lines[len(lines)-1], err)
		}
		note := strings.Join(sum.Notes, "\n")
		if !strings.Contains(note, "policy "+c.policy) || !strings.Contains(note, "kernel 6.1.") {
			t.Errorf("%s: notes %q do not name kernel 6.1 and policy %s", c.meta, sum.Notes, c.policy)
		}
		if c.args != nil && !strings.Contains(note, "--returns ret:") {
			t.Errorf("%s: --returns ret gave no note: %q", c.meta, sum.Notes)
		}
		t.Logf("%s: %s", c.meta, note)
	}
}
