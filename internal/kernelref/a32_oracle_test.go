package kernelref

import (
	"os"
	"testing"
)

func TestA32OracleBuilds(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 to build the ARM32 kernel oracle")
	}
	b, err := PrepareA32(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(b.Dir, b.Version)
}
