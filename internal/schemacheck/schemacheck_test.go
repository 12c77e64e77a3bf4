package schemacheck

import (
	"strings"
	"testing"
)

// TestSchemasCompile: every checked-in schema compiles with its references,
// and the validator refuses what the vocabulary forbids (an address as a
// number, unspaced bytes, an unknown key).
func TestSchemasCompile(t *testing.T) {
	names, err := Names()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 10 {
		t.Fatalf("only %d schemas: %v", len(names), names)
	}
	good := `{"arch":"x86-64","addr":"0x0","len":1,"bytes":"90","asm":"nop"}`
	if err := Validate("decode", []byte(good+"\n"+good)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`{"arch":"x86-64","addr":0,"len":1,"bytes":"90","asm":"nop"}`,
		`{"arch":"x86-64","addr":"0x0","len":2,"bytes":"9090","asm":"nop"}`,
		`{"arch":"x86-64","addr":"0x0","len":1,"bytes":"90","asm":"nop","Asm":"nop"}`,
		`{"arch":"amd64","addr":"0x0","len":1,"bytes":"90","asm":"nop"}`,
	} {
		if err := Validate("decode", []byte(bad)); err == nil || !strings.Contains(err.Error(), "schemas/decode.json") {
			t.Errorf("%s: %v, want a schema error", bad, err)
		}
	}
}
