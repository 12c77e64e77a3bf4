package kimage

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// needTool fails (never skips) when a tool the tests rely on is missing: the
// CI script installs it (binutils, gcc, gcc-multilib is not needed, xz-utils).
func needTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: install it (apt-get install binutils gcc xz-utils zstd dpkg)", name)
	}
	return p
}

func run(t testing.TB, dir string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// kernelLikeAsm is an assembly file shaped like a tiny kernel: functions with
// named sites and the x86 6.1 tables (exception table, bug table, jump table,
// static-call sites, alternatives, kprobe blacklist, text-range symbols) pointing
// at them. The assembler, not kboost, computes every displacement.
func kernelLikeAsm(bits int) string {
	ptr, bugAddr := ".quad", "bug_site - ."
	if bits == 32 {
		ptr, bugAddr = ".long", "bug_site"
	}
	r := strings.NewReplacer("PTR", ptr, "BUGADDR", bugAddr)
	return r.Replace(`
	.text
	.globl _text
_text:
	.globl func_a
	.type func_a,@function
func_a:
	nop
ex_site:
	movl (%esp), %eax
	nop
bug_site:
	ud2
	ret
	.size func_a, .-func_a

	.globl func_b
	.type func_b,@function
func_b:
jl_site:
	.byte 0x66, 0x90
sc_site:
	.byte 0xe8
	.long 0
alt_site:
	nop
	nop
	nop
	ret
	.size func_b, .-func_b

	.globl __entry_text_start
__entry_text_start:
	.globl func_c
	.type func_c,@function
func_c:
	nop
	nop
	ret
	.size func_c, .-func_c
	.globl __entry_text_end
__entry_text_end:
	.globl __kprobes_text_start
__kprobes_text_start:
	.globl func_d
	.type func_d,@function
func_d:
	ret
	.size func_d, .-func_d
	.globl __kprobes_text_end
__kprobes_text_end:

	.section .init.text,"ax"
	.globl init_fn
	.type init_fn,@function
init_fn:
	ret
	.size init_fn, .-init_fn

	.section __ex_table,"a"
	.balign 4
	.long ex_site - .
	.long func_a - .
	.long 0

	.section __bug_table,"aw"
	.long BUGADDR
	.long 0
	.word 42
	.word 0

	.section .altinstructions,"a"
	.long alt_site - .
	.long alt_repl - .
	.word 0x1234
	.byte 3
	.byte 3

	.section .altinstr_replacement,"ax"
alt_repl:
	nop
	nop
	nop

	.data
	.balign 8
	.globl some_key
some_key:
	PTR 0
	.globl __start___jump_table
__start___jump_table:
	.long jl_site - .
	.long func_c - .
	PTR some_key
	.globl __stop___jump_table
__stop___jump_table:
	.globl __start_static_call_sites
__start_static_call_sites:
	.long sc_site - .
	.long some_key - . + 1
	.globl __stop_static_call_sites
__stop_static_call_sites:
	.globl __start_kprobe_blacklist
__start_kprobe_blacklist:
	PTR func_b
	.globl __stop_kprobe_blacklist
__stop_kprobe_blacklist:
`)
}

// buildKernelLike assembles and links kernelLikeAsm for 32 or 64 bits.
func buildKernelLike(t testing.TB, bits int) string {
	t.Helper()
	gcc := needTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "k.S")
	if err := os.WriteFile(src, []byte(kernelLikeAsm(bits)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "k.elf")
	args := []string{"-nostdlib", "-static", "-no-pie", "-Wl,-e,func_a", "-Wl,--build-id=none", "-o", out, src}
	if bits == 32 {
		args = append([]string{"-m32"}, args...)
	}
	run(t, dir, gcc, args...)
	return out
}

// nmSymbols returns name -> address of the defined symbols, per GNU nm.
func nmSymbols(t testing.TB, path string) map[string]uint64 {
	t.Helper()
	out := run(t, "", needTool(t, "nm"), "--defined-only", path)
	m := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			t.Fatalf("nm line %q", sc.Text())
		}
		m[f[2]] = a
	}
	return m
}

// readelfSection is one row of `readelf -SW`.
type readelfSection struct {
	Name            string
	Type            string
	Addr, Off, Size uint64
	Flags           string
}

// readelfSections parses `readelf -SW` (GNU binutils) output.
func readelfSections(t testing.TB, path string) []readelfSection {
	t.Helper()
	out := run(t, "", needTool(t, "readelf"), "-SW", path)
	var secs []readelfSection
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, "]")
		if !strings.HasPrefix(strings.TrimSpace(line), "[") || i < 0 || strings.Contains(line, "Nr]") {
			continue
		}
		if strings.TrimSpace(line[strings.Index(line, "[")+1:i]) == "0" {
			continue // the NULL section
		}
		f := strings.Fields(line[i+1:])
		if len(f) < 6 {
			continue
		}
		hex := func(s string) uint64 {
			v, err := strconv.ParseUint(s, 16, 64)
			if err != nil {
				t.Fatalf("readelf line %q: %v", line, err)
			}
			return v
		}
		s := readelfSection{Name: f[0], Type: f[1], Addr: hex(f[2]), Off: hex(f[3]), Size: hex(f[4])}
		if len(f) == 10 { // Flg column present
			s.Flags = f[6]
		}
		secs = append(secs, s)
	}
	return secs
}
