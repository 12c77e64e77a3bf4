package vm

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kboost/kboost/vm/guest"
)

// The kboost binary goes into the initramfs only for the steps that run it,
// at guest.KboostPath.
func TestKboostFiles(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kboost")
	if err := os.WriteFile(bin, []byte("kboost"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{KboostBinary: bin}
	files, err := kboostFiles(context.Background(), &cfg, AMD64, []guest.Step{{Name: "kallsyms"}, {Name: "kboost-verify"}})
	if err != nil || len(files) != 0 {
		t.Fatalf("steps without kboost commands: %v, %v; want no file", files, err)
	}
	for _, step := range []string{"probe-cli", "ia32-refused"} {
		files, err := kboostFiles(context.Background(), &cfg, AMD64, []guest.Step{{Name: "probe-lifecycle"}, {Name: step}})
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 1 || files[0].Name != guest.KboostPath || files[0].Mode != 0o755 || string(files[0].Data) != "kboost" {
			t.Errorf("%s: %+v; want the binary at %s, mode 0755", step, files, guest.KboostPath)
		}
	}
}
