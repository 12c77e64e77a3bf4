//go:build linux

package cli

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kimage"
)

// oneRuleCases are instructions of every arch written as bytes in memory
// order and as objdump prints them (--words), with objdump's text for them
// (binutils 2.40: objdump -D -b binary -m ARCH, -M force-thumb).
var oneRuleCases = []struct {
	arch, bytes, words, asm string
	// wordsAsBytes is what the --words text means when read as bytes ("" when
	// the arch has no words).
	wordsAsBytes string
}{
	{arch: "x86-64", bytes: "48 8b 05 10 00 00 00", words: "48 8b 05 10 00 00 00", asm: "mov 0x10(%rip),%rax"},
	{arch: "i386", bytes: "89 c8", words: "89c8", asm: "mov %ecx,%eax"},
	{arch: "arm64", bytes: "1f 20 03 d5", words: "d503201f", asm: "nop", wordsAsBytes: "fnmadd s21, s30, s0, s0"},
	{arch: "arm", bytes: "04 e0 2d e5", words: "e52de004", asm: "push {lr}"},
	{arch: "thumb", bytes: "2d e9 f0 4f", words: "e92d 4ff0", asm: "stmdb sp!, {r4, r5, r6, r7, r8, r9, sl, fp, lr}"},
}

// defaultPolicies are the policies README.md documents as each arch's
// default.
var defaultPolicies = map[string]string{"x86-64": "linux-6.1", "i386": "linux-6.1", "arm64": "linux-6.1-arm64", "arm": "linux-6.1-arm", "thumb": "linux-6.1-thumb"}

// normAsm folds white space and drops objdump's trailing "@ ..." comment.
func normAsm(s string) string {
	s, _, _ = strings.Cut(s, "@")
	return strings.Join(strings.Fields(s), " ")
}

// TestOneInputRule runs the same hex through decode, explain, sim and
// audit --func (of an ELF file holding the bytes as its one function) for
// every arch: each reads the bytes in memory order and names the same
// instruction; --words (and a 0x prefix) gives the word reading; one
// instruction's commands refuse a truncated one and trailing bytes.
func TestOneInputRule(t *testing.T) {
	for _, tc := range oneRuleCases {
		t.Run(tc.arch, func(t *testing.T) {
			arch, err := decode.LookupArch(tc.arch)
			if err != nil {
				t.Fatal(err)
			}
			by := strings.Fields(tc.bytes)
			wordArgs := append([]string{"--words"}, strings.Fields(tc.words)...)
			asmOf := func(wantBytes string, args ...string) string {
				t.Helper()
				out, stderr, code := run(t, args...)
				if code != 0 {
					t.Fatalf("%v: exit %d: %s", args, code, stderr)
				}
				var rec struct {
					Asm   string `json:"asm"`
					Bytes string `json:"bytes"`
				}
				line, _, _ := strings.Cut(out, "\n")
				if args[0] == "explain" || args[0] == "sim" {
					line = out
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("%v: %v in %q", args, err, out)
				}
				if rec.Bytes != wantBytes {
					t.Errorf("%v: bytes %q, want %q", args, rec.Bytes, wantBytes)
				}
				return normAsm(rec.Asm)
			}
			for _, form := range [][]string{by, {strings.Join(by, "")}, wordArgs} {
				for _, cmd := range [][]string{{"decode", "--arch", tc.arch, "--json"}, {"explain", "--arch", tc.arch, "--json"}} {
					if got := asmOf(tc.bytes, append(cmd, form...)...); got != tc.asm {
						t.Errorf("%v %v: %q, want %q", cmd, form, got, tc.asm)
					}
				}
			}
			if tc.arch == "arm64" {
				for _, cmd := range []string{"decode", "explain"} {
					if got := asmOf("d5 03 20 1f", cmd, "--arch", tc.arch, "--json", tc.words); got != tc.wordsAsBytes {
						t.Errorf("%s %s without --words: %q, want the bytes' reading %q", cmd, tc.words, got, tc.wordsAsBytes)
					}
					if got := asmOf(tc.bytes, cmd, "--arch", tc.arch, "--json", "0x"+tc.words); got != tc.asm {
						t.Errorf("%s 0x%s: %q, want the word's reading %q", cmd, tc.words, got, tc.asm)
					}
				}
			}
			if arch.Mode != decode.Mode64 && arch.Mode != decode.Mode32 && os.Getenv("KBOOST_ORACLE") == "" {
				t.Log("sim: set KBOOST_ORACLE=1 (runs qemu-user)")
			} else {
				for _, form := range [][]string{by, wordArgs} {
					if got := asmOf(tc.bytes, append([]string{"sim", "--arch", tc.arch, "--json", "--trials", "1"}, form...)...); got != tc.asm {
						t.Errorf("sim %v: %q, want %q", form, got, tc.asm)
					}
				}
			}
			// audit --func of a file whose one function is these bytes
			code, err := arch.ParseHex(by, false)
			if err != nil {
				t.Fatal(err)
			}
			img := oneFuncELF(t, arch, code)
			if f, err := kimage.OpenBytes(img); err != nil || f.Arch != arch {
				t.Logf("audit: kimage does not read %s ELF files (%v)", tc.arch, err)
			} else {
				path := filepath.Join(t.TempDir(), "f.o")
				if err := os.WriteFile(path, img, 0o644); err != nil {
					t.Fatal(err)
				}
				if got := asmOf(tc.bytes, "audit", path, "--func", "f", "--json"); got != tc.asm {
					t.Errorf("audit --func f: %q, want %q", got, tc.asm)
				}
				// without --policy: the arch's default, named
				out, stderr, code := run(t, "audit", path, "--summary")
				want := "policy " + defaultPolicies[tc.arch]
				if code != 0 || !strings.Contains(out, tc.arch+", "+want) || !strings.Contains(out, "note: kernel version unknown: "+want) {
					t.Errorf("audit %s without --policy: exit %d, %q %q; want %q named", tc.arch, code, out, stderr, want)
				}
			}
			// one instruction means one: truncated and trailing bytes are refused
			for _, bad := range [][]string{by[:len(by)-1], append(append([]string{}, by...), by...)} {
				for _, cmd := range []string{"explain", "sim"} {
					_, stderr, code := run(t, append([]string{cmd, "--arch", tc.arch}, bad...)...)
					want := "truncated instruction"
					if len(bad) > len(by) {
						want = "bytes after the instruction"
					}
					if code != ExitUsage || !strings.Contains(stderr, want) {
						t.Errorf("%s %v: exit %d, %q; want %d and %q", cmd, bad, code, stderr, ExitUsage, want)
					}
				}
			}
			_, stderr, code2 := run(t, append([]string{"decode", "--arch", tc.arch}, by[:len(by)-1]...)...)
			if code2 != ExitUsage || !strings.Contains(stderr, "truncated instruction") {
				t.Errorf("decode %v: exit %d, %q; want %d and a truncated instruction", by[:len(by)-1], code2, stderr, ExitUsage)
			}
		})
	}
}

// oneFuncELF builds an executable ELF file of arch whose .text is code, one
// function "f" (Thumb: odd address, and a $t mapping symbol, as the ARM ELF
// ABI marks Thumb code).
func oneFuncELF(t *testing.T, arch *decode.Arch, code []byte) []byte {
	t.Helper()
	machine := map[decode.Mode]elf.Machine{decode.Mode64: elf.EM_X86_64, decode.Mode32: elf.EM_386,
		decode.ModeA64: elf.EM_AARCH64, decode.ModeA32: elf.EM_ARM, decode.ModeT32: elf.EM_ARM}[arch.Mode]
	const base = 0x10000
	const textOff = 0x100
	is64 := arch.PtrSize == 8
	strtab := []byte("\x00f\x00$t\x00")
	shstr := []byte("\x00.text\x00.symtab\x00.strtab\x00.shstrtab\x00")
	le := binary.LittleEndian
	type sym struct {
		name, info uint8
		value      uint64
		size       uint64
	}
	syms := []sym{{}}
	fval := uint64(base)
	if arch.Mode == decode.ModeT32 {
		syms = append(syms, sym{name: 3, info: byte(elf.STB_LOCAL)<<4 | byte(elf.STT_NOTYPE), value: base})
		fval |= 1
	}
	nlocal := len(syms)
	syms = append(syms, sym{name: 1, info: byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_FUNC), value: fval, size: uint64(len(code))})
	var b bytes.Buffer
	b.Write(make([]byte, textOff))
	b.Write(code)
	for b.Len()%8 != 0 {
		b.WriteByte(0)
	}
	symOff := b.Len()
	for _, s := range syms {
		if is64 {
			binary.Write(&b, le, elf.Sym64{Name: uint32(s.name), Info: s.info, Shndx: 1, Value: s.value, Size: s.size})
		} else {
			binary.Write(&b, le, elf.Sym32{Name: uint32(s.name), Info: s.info, Shndx: 1, Value: uint32(s.value), Size: uint32(s.size)})
		}
	}
	if syms[0] == (sym{}) { // the null symbol has section 0
		z := b.Bytes()[symOff:]
		if is64 {
			le.PutUint16(z[6:], 0)
		} else {
			le.PutUint16(z[14:], 0)
		}
	}
	symEnd := b.Len()
	strOff := b.Len()
	b.Write(strtab)
	shstrOff := b.Len()
	b.Write(shstr)
	for b.Len()%8 != 0 {
		b.WriteByte(0)
	}
	shOff := b.Len()
	type sec struct {
		name, typ    uint32
		flags, addr  uint64
		off, size    uint64
		link, info   uint32
		align, entsz uint64
	}
	entsz := uint64(24)
	if !is64 {
		entsz = 16
	}
	secs := []sec{{},
		{name: 1, typ: uint32(elf.SHT_PROGBITS), flags: uint64(elf.SHF_ALLOC | elf.SHF_EXECINSTR), addr: base, off: textOff, size: uint64(len(code)), align: 4},
		{name: 7, typ: uint32(elf.SHT_SYMTAB), off: uint64(symOff), size: uint64(symEnd - symOff), link: 3, info: uint32(nlocal), align: 8, entsz: entsz},
		{name: 15, typ: uint32(elf.SHT_STRTAB), off: uint64(strOff), size: uint64(len(strtab)), align: 1},
		{name: 23, typ: uint32(elf.SHT_STRTAB), off: uint64(shstrOff), size: uint64(len(shstr)), align: 1},
	}
	for _, s := range secs {
		if is64 {
			binary.Write(&b, le, elf.Section64{Name: s.name, Type: s.typ, Flags: s.flags, Addr: s.addr, Off: s.off, Size: s.size, Link: s.link, Info: s.info, Addralign: s.align, Entsize: s.entsz})
		} else {
			binary.Write(&b, le, elf.Section32{Name: s.name, Type: s.typ, Flags: uint32(s.flags), Addr: uint32(s.addr), Off: uint32(s.off), Size: uint32(s.size), Link: s.link, Info: s.info, Addralign: uint32(s.align), Entsize: uint32(s.entsz)})
		}
	}
	img := b.Bytes()
	ident := [elf.EI_NIDENT]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS32), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)}
	var hdr bytes.Buffer
	if is64 {
		ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
		binary.Write(&hdr, le, elf.Header64{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: 1, Entry: base,
			Shoff: uint64(shOff), Ehsize: 64, Shentsize: 64, Shnum: uint16(len(secs)), Shstrndx: 4})
	} else {
		var flags uint32
		if machine == elf.EM_ARM {
			flags = 0x05000000 // EABI version 5
		}
		binary.Write(&hdr, le, elf.Header32{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: 1, Entry: base,
			Shoff: uint32(shOff), Flags: flags, Ehsize: 52, Shentsize: 40, Shnum: uint16(len(secs)), Shstrndx: 4})
	}
	copy(img, hdr.Bytes())
	return img
}

// TestInputErrWraps: the usage error of a truncated or over-long HEX keeps
// the decoder's typed error (errors.Is) and exits 2.
func TestInputErrWraps(t *testing.T) {
	for _, c := range []struct {
		code []byte
		want error
	}{{[]byte{0x48, 0x8b}, decode.ErrTruncated}, {[]byte{0x90, 0x90}, decode.ErrTrailing}} {
		_, derr := decode.X86_64.DecodeOne(c.code, 0)
		err := inputErr(decode.X86_64, derr)
		if !errors.Is(err, c.want) || exitCode(err) != ExitUsage {
			t.Errorf("% x: %v (exit %d), want %v and exit %d", c.code, err, exitCode(err), c.want, ExitUsage)
		}
	}
	if inputErr(decode.X86_64, nil) != nil {
		t.Error("no decode error is no input error")
	}
}
