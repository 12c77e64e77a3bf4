//go:build linux && amd64

package cli

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// regCells reads the first state's register table of a sim HTML page:
// register -> [before, after, hit before, hit after, row class, cell classes].
func regCells(t *testing.T, page string) map[string][]string {
	t.Helper()
	trial := page[strings.Index(page, `<div class="trial">`):]
	trial = trial[:strings.Index(trial, "</table>")]
	row := regexp.MustCompile(`<tr( class="[^"]*")? data-reg="([^"]+)"><th[^>]*>[^<]*</th>` + strings.Repeat(`<td class="([^"]*)">([^<]*)</td>`, 4) + `</tr>`)
	out := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(trial, -1) {
		out[m[2]] = []string{m[4], m[6], m[8], m[10], m[1], m[3] + "|" + m[5] + "|" + m[7] + "|" + m[9]}
	}
	if len(out) < 4 {
		t.Fatalf("sim page: %d register rows in the first state", len(out))
	}
	return out
}

// TestSimPictureRegisters: the sim page's before and after columns hold what
// the CPU did from the registers --set gave: mov $imm,%rax writes the
// immediate and moves the PC by the instruction's length, in place and out of
// line; the hit starts at the slot (the sandbox line says where); a register
// the instruction does not touch keeps its --set value everywhere.
func TestSimPictureRegisters(t *testing.T) {
	page := mustRun(t, "sim", "--trials", "1", "--format", "html", "--set", "rax=0x1", "--set", "rcx=0x1234", "48", "c7", "c0", "78", "56", "34", "12")
	var code, slot uint64
	sb := regexp.MustCompile(`sandbox: code at (0x[0-9a-f]+), slot at (0x[0-9a-f]+)`).FindStringSubmatch(page)
	if sb == nil {
		t.Fatal("sim page: no sandbox line")
	}
	fmt.Sscanf(sb[1], "0x%x", &code)
	fmt.Sscanf(sb[2], "0x%x", &slot)
	r := regCells(t, page)
	want := map[string][]string{
		"rax": {"0x1", "0x12345678", "0x1", "0x12345678"},
		"rcx": {"0x1234", "0x1234", "0x1234", "0x1234"},
		"pc":  {fmt.Sprintf("%#x", code), fmt.Sprintf("%#x", code+7), fmt.Sprintf("%#x", slot), fmt.Sprintf("%#x", code+7)},
	}
	for reg, w := range want {
		if got := r[reg][:4]; strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("%s: before/after in place, before/after hit = %v, want %v", reg, got, w)
		}
	}
	marks := map[string]string{
		"rax": "mono before|mono after chg|mono hitbefore|mono hit chg",
		"rcx": "mono before|mono after|mono hitbefore|mono hit",
		"pc":  "mono before|mono after chg|mono hitbefore entrydiff|mono hit chg",
	}
	for reg, w := range marks {
		if r[reg][5] != w || r[reg][4] != "" {
			t.Errorf("%s: marks %q, row %q; want %q and no divergence", reg, r[reg][5], r[reg][4], w)
		}
	}
	// ret $8 emulated the 6.1 way diverges in rsp: in place the CPU pops the
	// return address and 8 more bytes; the row is marked
	r = regCells(t, mustRun(t, "sim", "--trials", "1", "--format", "html", "--preemption", "y", "c2", "08", "00"))
	var sp0, sp1 uint64
	fmt.Sscanf(r["rsp"][0], "0x%x", &sp0)
	fmt.Sscanf(r["rsp"][1], "0x%x", &sp1)
	if !strings.Contains(r["rsp"][4], "differs-row") || sp1 != sp0+16 || r["rsp"][1] == r["rsp"][3] {
		t.Errorf("ret $8 emulated: rsp row %v, want in place +16 and the row marked diverged", r["rsp"])
	}
}
