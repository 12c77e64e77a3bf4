package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// a64Facts are rows of boost/testdata/linux-6.1-arm64.golden (the kernel's
// own decisions, compiled from Linux 6.1): word, kprobe verdict, deciding rule
// (for simulations, the kernel's simulate_* handler).
var a64Facts = []struct {
	word    uint32
	verdict string
	rule    string
}{
	{0xd503201f, "singlestep", ""},                         // nop: slot d503201f,d42000c0
	{0xa9bf7bfd, "singlestep", ""},                         // stp x29, x30, [sp, #-16]!
	{0xd65f03c0, "emulate", "arm64.simulate.br_blr_ret"},   // ret: simulate_br_blr_ret
	{0xd4000001, "reject", ""},                             // svc #0: reject EINVAL
	{0xd53b4220, "reject", "arm64.not_steppable.mrs_daif"}, // mrs x0, daif: reject EINVAL
}

// a64Cell is where the Arm ARM's top-level decode puts w in the drawing:
// row op0 = bits 28..25, column bits 31..29 then 24..23.
func a64Cell(w uint32) (row, col int) {
	return int(w>>25) & 15, int(w>>29)<<2 | int(w>>23)&3
}

func TestOpcodesA64Text(t *testing.T) {
	out, stderr, code := run(t, "opcodes", "--arch", "arm64")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, l := range lines {
		if len(l) > 100 {
			t.Errorf("line %d is %d columns: %q", i+1, len(l), l)
		}
	}
	if !strings.HasPrefix(out, "policy linux-6.1-arm64, arm64") {
		t.Errorf("output does not start with the default policy: %q", lines[0])
	}
	// The 16 op0 rows: "bbbb" then 8 groups of 4 cells.
	grid := map[int]string{}
	for _, l := range lines {
		var row int
		if n, _ := fmt.Sscanf(l, "%b", &row); n == 1 && len(l) > 4 && l[4] == ' ' && row < 16 {
			grid[row] = gridCells(t, l, 1)
		}
	}
	if len(grid) != 16 {
		t.Fatalf("%d grid rows, want 16:\n%s", len(grid), out)
	}
	for _, f := range a64Facts {
		r, c := a64Cell(f.word)
		got := grid[r][c]
		want := map[string]byte{"singlestep": 'S', "emulate": 'E', "reject": 'X'}[f.verdict]
		// Upper case: all encodings of the cell agree; lower case: mixed.
		if got == '.' || got >= 'A' && got <= 'Z' && got != want {
			t.Errorf("%08x: cell %04b/%d is %c, the kernel says %s", f.word, r, c, got, f.verdict)
		}
	}
	for _, class := range []string{"branch", "loadstore", "system", "fpsimd"} {
		if !strings.Contains(out, "\n"+class+" ") {
			t.Errorf("class summary lacks %s", class)
		}
	}
}

func TestOpcodesA64Class(t *testing.T) {
	out, stderr, code := run(t, "opcodes", "--arch", "arm64", "--class", "branch")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var ret string
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 100 {
			t.Errorf("%d columns: %q", len(l), l)
		}
		// ret: 1101 0110 0101 1111 0000 00 Rn 00000
		if strings.HasPrefix(l, "ret ") && strings.Contains(l, "11010110 01011111 000000xx xxx00000") {
			ret = l
		}
	}
	if ret == "" {
		t.Fatalf("no ret line:\n%s", out)
	}
	if !strings.Contains(ret, "emulate") || !strings.Contains(ret, "arm64.simulate.br_blr_ret") {
		t.Errorf("ret: %q, the kernel simulates it with simulate_br_blr_ret", ret)
	}
}

func TestOpcodesA64JSON(t *testing.T) {
	for _, pol := range []string{"linux-6.1-arm64", "boost-arm64", "uprobes-arm64"} {
		out, stderr, code := run(t, "opcodes", "--arch", "arm64", "--policy", pol, "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", pol, code, stderr)
		}
		var v struct {
			Policy string
			Rows   []struct {
				Op0   string
				Cells []struct {
					Code   string
					Counts map[string]int
				}
			}
			Encodings []struct {
				Mnemonic, Verdict, Word string
				Reasons                 []string
			}
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%s: %v", pol, err)
		}
		if v.Policy != pol || len(v.Rows) != 16 || len(v.Rows[0].Cells) != 32 || len(v.Encodings) < 1000 {
			t.Fatalf("%s: policy %q, %d rows, %d encodings", pol, v.Policy, len(v.Rows), len(v.Encodings))
		}
		if pol != "linux-6.1-arm64" {
			continue
		}
		for _, f := range a64Facts {
			r, c := a64Cell(f.word)
			if n := v.Rows[r].Cells[c].Counts[f.verdict]; n == 0 {
				t.Errorf("%08x: cell %s/%d counts %v, the kernel says %s", f.word, v.Rows[r].Op0, c, v.Rows[r].Cells[c].Counts, f.verdict)
			}
		}
	}
}

func TestOpcodesA64BadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"opcodes", "--arch", "arm64", "--class", "nosuch"}, "--class"},
		{[]string{"opcodes", "--arch", "arm64", "--map", "one"}, "--map"},
		{[]string{"opcodes", "--arch", "arm64", "--policy", "linux-6.1"}, "does not model arm64"},
		{[]string{"opcodes", "--class", "branch"}, "--class"},
	} {
		_, stderr, code := run(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q (want 2 and one line naming %q)", tc.args, code, stderr, tc.want)
		}
	}
	// x86 is unchanged.
	out, _, code := run(t, "opcodes", "--map", "one")
	if code != 0 || !strings.HasPrefix(out, "policy linux-6.1, x86-64") || !strings.Contains(out, "map one") {
		t.Errorf("x86 grid: exit %d, %.80q", code, out)
	}
}

// TestOpcodesA32 checks the A32 drawing against rows of
// boost/testdata/linux-6.1-arm.golden: e92dd800 (push {fp, ip, lr, pc}) is
// single-stepped from a slot, e12fff1e (bx lr) simulated, 07f001f8 (udf)
// rejected.
func TestOpcodesA32(t *testing.T) {
	out, stderr, code := run(t, "opcodes", "--arch", "arm")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	grid := map[int]string{}
	for i, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if len(l) > 100 {
			t.Errorf("line %d is %d columns: %q", i+1, len(l), l)
		}
		var row int
		if n, _ := fmt.Sscanf(l[min(5, len(l)):], "%b", &row); n == 1 && (strings.HasPrefix(l, "cond ") || strings.HasPrefix(l, "1111 ")) {
			if l[0] == '1' {
				row += 8
			}
			grid[row] = gridCells(t, l, 2)
		}
	}
	if len(grid) != 16 {
		t.Fatalf("%d grid rows, want 16:\n%s", len(grid), out)
	}
	for _, f := range []struct {
		word uint32
		want byte
	}{{0xe92dd800, 'S'}, {0xe12fff1e, 'E'}, {0x07f001f8, 'X'}} {
		// Row: op0 (bits 27..25), +8 when cond is 1111; column: bits 24..20.
		r, c := int(f.word>>25&7), int(f.word>>20&31)
		if f.word>>28 == 0xf {
			r += 8
		}
		if got := grid[r][c]; got == '.' || got >= 'A' && got <= 'Z' && got != f.want {
			t.Errorf("%08x: cell %d/%d is %c, the kernel says %c", f.word, r, c, got, f.want)
		}
	}
	out, _, code = run(t, "opcodes", "--arch", "arm", "--class", "branch")
	if code != 0 || !strings.Contains(out, "policy linux-6.1-arm, arm class branch") {
		t.Errorf("--class branch: exit %d, %.100q", code, out)
	}
}

// gridCells returns the 32 cell letters of a grid line whose row label is
// nlabel words long.
func gridCells(t *testing.T, l string, nlabel int) string {
	t.Helper()
	f := strings.Fields(l)
	if len(f) < nlabel+8 {
		t.Fatalf("short grid line %q", l)
	}
	g := strings.Join(f[nlabel:nlabel+8], "")
	if len(g) != 32 {
		t.Fatalf("grid line %q: %d cells", l, len(g))
	}
	return g
}

// TestOpcodesThumb checks the Thumb drawing against rows of
// boost/testdata/linux-6.1-arm-thumb.golden: b580 (push {r7, lr}) runs in
// a slot, 4770 (bx lr) is simulated, e92d4ff0 (push.w) runs in a slot, de18
// (udf) is rejected.
func TestOpcodesThumb(t *testing.T) {
	out, stderr, code := run(t, "opcodes", "--arch", "thumb")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := map[string]string{}
	for i, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if len(l) > 100 {
			t.Errorf("line %d is %d columns: %q", i+1, len(l), l)
		}
		switch {
		case strings.HasPrefix(l, "t16 "):
			rows[strings.Fields(l)[1]] = gridCells(t, l, 2)
		case strings.HasPrefix(l, "t32 "):
			f := strings.Fields(l)
			rows[f[1]+" "+f[2]] = gridCells(t, l, 3)
		}
	}
	if len(rows) != 27 {
		t.Fatalf("%d grid rows, want 27:\n%s", len(rows), out)
	}
	for _, f := range []struct {
		word uint32
		want string
	}{{0xb580, "singlestep"}, {0x4770, "emulate"}, {0xe92d4ff0, "singlestep"}, {0xde18, "reject"}} {
		// T16: row bits 15..12, column bits 11..7; T32: row bits 28..27 and
		// 26..25, column bits 24..20.
		var key string
		var col int
		if f.word < 0x10000 {
			key, col = fmt.Sprintf("%04b", f.word>>12), int(f.word>>7&31)
		} else {
			key, col = fmt.Sprintf("%02b %02b", f.word>>27&3, f.word>>25&3), int(f.word>>20&31)
		}
		got := rows[key][col]
		want := map[string]byte{"singlestep": 'S', "emulate": 'E', "reject": 'X'}[f.want]
		if got == '.' || got >= 'A' && got <= 'Z' && got != want {
			t.Errorf("%x: cell %s/%d is %c, the kernel says %s", f.word, key, col, got, f.want)
		}
	}
}
