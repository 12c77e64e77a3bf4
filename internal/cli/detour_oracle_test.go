package cli

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/demo"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm"
)

type detourRow struct {
	off         int
	bytes       []byte
	asm, note   string
	masked      bool
	bytesString string
}

// detourRows reads the detour buffer table of an explorer page.
func detourRows(t *testing.T, page string) []detourRow {
	t.Helper()
	i := strings.Index(page, `<table class="detour">`)
	if i < 0 {
		t.Fatal("no detour buffer table on the page")
	}
	tab := page[i : i+strings.Index(page[i:], "</table>")]
	var rows []detourRow
	for _, m := range regexp.MustCompile(`<tr><td class="num">\+(\d+)</td><td class="mono">([^<]*)</td><td class="mono">([^<]*)</td><td>([^<]*)</td></tr>`).FindAllStringSubmatch(tab, -1) {
		off, _ := strconv.Atoi(m[1])
		r := detourRow{off: off, asm: m[3], note: m[4], bytesString: m[2]}
		for _, h := range strings.Fields(m[2]) {
			if h == ".." {
				r.masked = true
				h = "00"
			}
			b, _ := hex.DecodeString(h)
			r.bytes = append(r.bytes, b...)
		}
		rows = append(rows, r)
	}
	if len(rows) < 2 {
		t.Fatalf("detour table: %d rows", len(rows))
	}
	return rows
}

// rel32 is the target of an E9/E8 rel32 at addr.
func rel32(t *testing.T, addr uint64, b []byte) uint64 {
	t.Helper()
	if len(b) != 5 || (b[0] != 0xE9 && b[0] != 0xE8) {
		t.Fatalf("% x at %#x: not a jmp/call rel32", b, addr)
	}
	return addr + 5 + uint64(int64(int32(binary.LittleEndian.Uint32(b[1:]))))
}

// objdumpInsns is the bytes of the n instructions objdump gives from addr on
// in file.
func objdumpInsns(t *testing.T, file string, addr uint64, n int) [][]byte {
	t.Helper()
	out, err := exec.Command("objdump", "-d", "-w", fmt.Sprintf("--start-address=%#x", addr), fmt.Sprintf("--stop-address=%#x", addr+32), file).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	var insns [][]byte
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.SplitN(l, "\t", 3)
		if len(f) < 3 || !strings.HasSuffix(strings.TrimSpace(f[0]), ":") {
			continue
		}
		b, _ := hex.DecodeString(strings.ReplaceAll(f[1], " ", ""))
		insns = append(insns, b)
		if len(insns) == n {
			break
		}
	}
	return insns
}

func explorerGet(t *testing.T, ex *explorer, path string) string {
	t.Helper()
	srv := httptest.NewServer(ex.handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}

// TestExplorerDetour: at an optimizable site the explorer draws the optprobe:
// the jmp over the site lands on the buffer, the copies are the site's
// bytes (objdump's instruction lengths cover >= 5 bytes, as
// copy_optimized_instructions copies), the jmp back lands on addr+OptLen; in
// a Debian kernel the buffer starts with the kernel's own template, whose
// length and call target are kallsyms' optprobe_template_end -
// optprobe_template_entry and optimized_callback.
func TestExplorerDetour(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (objdump, Debian's kernel)")
	}
	t.Run("demo", func(t *testing.T) {
		ex, err := openExplorer(nil, "", "")
		if err != nil {
			t.Fatal(err)
		}
		defer ex.f.Close()
		elf := t.TempDir() + "/demo.elf"
		if err := os.WriteFile(elf, demo.ELF, 0o644); err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, l := range strings.Split(mustRun(t, "audit", "--json"), "\n") {
			var rec struct {
				Addr, Func, Bytes string
				Off               uint64
				Optimizable       bool
			}
			if json.Unmarshal([]byte(l), &rec) != nil || !rec.Optimizable {
				continue
			}
			addr, _ := strconv.ParseUint(strings.TrimPrefix(rec.Addr, "0x"), 16, 64)
			fs, _ := ex.f.Symbols.ByName(rec.Func)
			page := explorerGet(t, ex, fmt.Sprintf("/insn?addr=%#x&off=%d", fs.Addr, rec.Off))
			checkDetourPage(t, page, elf, addr, 0)
			checked++
		}
		if checked < 5 {
			t.Errorf("%d optimizable sites checked", checked)
		}
		// in Chromium: no console error, the way in and the way back drawn
		b := startBrowser(t)
		srv := httptest.NewServer(ex.handler())
		defer srv.Close()
		loadURL(t, b, srv.URL+"/insn?addr=0x401000&off=9")
		if n := evalJS[[]int](t, b, `[document.querySelectorAll("svg path.todetour").length, document.querySelectorAll("svg path.jumpback").length, document.querySelectorAll("ol.optsteps li").length]`); n[0] != 1 || n[1] < 1 || n[2] != 7 {
			t.Errorf("optprobe page in the browser: %v arrows in, jump-back arrows, steps", n)
		}
	})
	t.Run("debian-amd64", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		deb, err := kimage.FetchDebianKernel(ctx, "linux-image-amd64")
		if err != nil {
			t.Fatal(err)
		}
		ks, err := vm.DebianKallsyms(ctx, "linux-image-amd64")
		if err != nil {
			t.Fatal(err)
		}
		ex, err := openExplorer([]string{deb}, ks, "")
		if err != nil {
			t.Fatal(err)
		}
		defer ex.f.Close()
		sym := func(n string) uint64 {
			s, ok := ex.f.Symbols.ByName(n)
			if !ok {
				t.Fatalf("kallsyms: no %s", n)
			}
			return s.Addr
		}
		tlen := int(sym("optprobe_template_end") - sym("optprobe_template_entry"))
		// the vmlinux, for objdump
		dk, err := kimage.ReadDeb(deb)
		if err != nil {
			t.Fatal(err)
		}
		f, err := kimage.OpenBytes(dk.Vmlinuz)
		if err != nil {
			t.Fatal(err)
		}
		vmlinux := t.TempDir() + "/vmlinux"
		if err := os.WriteFile(vmlinux, f.Image(), 0o644); err != nil {
			t.Fatal(err)
		}
		var site struct {
			Addr        string
			Off         uint64
			Optimizable bool
		}
		for _, l := range strings.Split(mustRun(t, "audit", deb, "--symbols", ks, "--func", "vfs_fchmod", "--json"), "\n") {
			if json.Unmarshal([]byte(l), &site) == nil && site.Optimizable {
				break
			}
		}
		if !site.Optimizable {
			t.Fatal("vfs_fchmod: no optimizable site")
		}
		addr, _ := strconv.ParseUint(strings.TrimPrefix(site.Addr, "0x"), 16, 64)
		page := explorerGet(t, ex, fmt.Sprintf("/insn?addr=%#x&off=%d", sym("vfs_fchmod"), site.Off))
		rows := checkDetourPage(t, page, vmlinux, addr, tlen)
		buf := detourBuffer(t, page)
		calls := 0
		for _, r := range rows {
			if r.off < tlen && len(r.bytes) == 5 && r.bytes[0] == 0xE8 {
				calls++
				if got := rel32(t, buf+uint64(r.off), r.bytes); got != sym("optimized_callback") {
					t.Errorf("template call at +%d: target %#x, kallsyms optimized_callback %#x", r.off, got, sym("optimized_callback"))
				}
			}
		}
		if calls != 1 {
			t.Errorf("template: %d calls, want the one to optimized_callback", calls)
		}
	})
}

func detourBuffer(t *testing.T, page string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`jumps to the detour buffer at (0x[0-9a-f]+)`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no detour buffer address in the steps")
	}
	v, _ := strconv.ParseUint(m[1][2:], 16, 64)
	return v
}

// checkDetourPage checks one explorer page's optprobe against objdump's
// lengths and bytes of file at addr; tlen is the template's length (0: the
// file has none).
func checkDetourPage(t *testing.T, page, file string, addr uint64, tlen int) []detourRow {
	t.Helper()
	if !strings.Contains(page, `id="optprobe"`) {
		t.Fatalf("%#x: no optprobe section", addr)
	}
	buf := detourBuffer(t, page)
	m := regexp.MustCompile(`writes jmp (0x[0-9a-f]+) \(([0-9a-f ]+)\) over`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("%#x: no patched jmp in the steps", addr)
	}
	pb, _ := hex.DecodeString(strings.ReplaceAll(m[2], " ", ""))
	if got := rel32(t, addr, pb); got != buf {
		t.Errorf("%#x: the jmp over the site goes to %#x, the buffer is at %#x", addr, got, buf)
	}
	// OptLen: whole instructions (objdump's) until >= 5 bytes
	optLen, n := 0, 0
	insns := objdumpInsns(t, file, addr, 8)
	for _, in := range insns {
		if optLen >= 5 {
			break
		}
		optLen += len(in)
		n++
	}
	rows := detourRows(t, page)
	var copied []detourRow
	for _, r := range rows {
		if r.off >= tlen && strings.HasPrefix(r.note, "copy of") {
			copied = append(copied, r)
		}
	}
	if len(copied) != n {
		t.Errorf("%#x: %d copied instructions, objdump: %d covering %d bytes", addr, len(copied), n, optLen)
	}
	for i, r := range copied {
		if i < n && !strings.Contains(r.asm, "(%rip)") && string(r.bytes) != string(insns[i]) {
			t.Errorf("%#x: copy %d is % x, objdump % x", addr, i, r.bytes, insns[i])
		}
	}
	back := rows[len(rows)-1]
	if got := rel32(t, buf+uint64(back.off), back.bytes); got != addr+uint64(optLen) {
		t.Errorf("%#x: jmp back to %#x, want addr+OptLen %#x", addr, got, addr+uint64(optLen))
	}
	if tlen > 0 && (len(copied) == 0 || copied[0].off != tlen) {
		t.Errorf("%#x: the copies start at +%v, the template is %d bytes", addr, copied, tlen)
	}
	for _, r := range rows {
		if r.masked && r.off >= tlen {
			t.Errorf("%#x: unknown bytes outside the template at +%d", addr, r.off)
		}
	}
	return rows
}
