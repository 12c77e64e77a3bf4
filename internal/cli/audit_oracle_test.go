package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kboost/kboost/kimage"
)

// TestReturnPatcherMatchesObjdump patches every function of the Debian amd64
// vmlinux the way apply_returns() would and checks the count against objdump's
// own list of `jmp` instructions to __x86_return_thunk.
func TestReturnPatcherMatchesObjdump(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (downloads and boots the Debian kernel once)")
	}
	kf, err := fetchKernelFiles(context.Background(), "linux-image-amd64", "", false)
	if err != nil {
		t.Fatal(err)
	}
	path := kf.Vmlinux
	f, err := openImage(path, kf.Kallsyms)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := kimage.NewReturnPatcher(f)
	if err != nil {
		t.Fatal(err)
	}
	text, ok := f.Section(".text")
	if !ok {
		t.Fatal("no .text")
	}
	data, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	patched := p.Patch(text.Addr, append([]byte(nil), data...))

	thunk := fmt.Sprintf("%x", kimage.ReturnThunk(p))
	cmd := exec.Command("objdump", "-d", "-w", "--no-show-raw-insn", "-j", ".text", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sites, _, err := kimage.ReturnSites(f)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[uint64]bool{}
	for _, a := range sites {
		listed[a] = true
	}
	// apply_returns() patches only the sites objtool listed: count objdump's
	// jumps to the thunk that are listed, and log the others.
	jumps := 0
	for sc.Scan() {
		l := sc.Text()
		i := strings.Index(l, "\tjmp ")
		if i < 0 || !strings.HasSuffix(strings.TrimSpace(l[i+5:]), thunk) {
			continue
		}
		var a uint64
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "%x:", &a); err != nil {
			t.Fatalf("objdump line %q: %v", l, err)
		}
		if listed[a] {
			jumps++
		} else {
			t.Logf("not in .return_sites (the kernel leaves it): %s", strings.TrimSpace(l))
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf(".return_sites: %d, patched in .text: %d, objdump jmp to __x86_return_thunk (%s) at listed sites: %d", kimage.CountReturnSites(p), patched, thunk, jumps)
	if patched != jumps || patched == 0 {
		t.Fatalf("patched %d return thunks, objdump shows %d listed jumps to __x86_return_thunk", patched, jumps)
	}
}
