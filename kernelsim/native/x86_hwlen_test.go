//go:build linux && amd64

package native

import (
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
)

// hwCases are instructions whose length objdump knows; the comment says what
// the CPU is expected to do with them (the test checks only the length).
var hwCases = []string{
	"90",                        // nop
	"4889c8",                    // mov rax, rcx
	"48b80102030405060708",      // movabs rax, imm64
	"e800000000",                // call rel32
	"66e80000",                  // call rel16: AMD honours 66 on near branches in 64-bit mode
	"c3",                        // ret
	"ebfe",                      // jmp $
	"0f8400000000",              // je rel32
	"8b05ffffffff",              // mov eax, [rip-1] (faults: length still known)
	"f30f1efa",                  // endbr64
	"0f1f440000",                // nopl 0(rax,rax)
	"660f1f840000000000",        // nopw
	"f00fc10b",                  // lock xadd [rbx], ecx
	"0fa2",                      // cpuid
	"0f31",                      // rdtsc
	"cc",                        // int3
	"cd03",                      // int 3
	"f4",                        // hlt (#GP in user mode)
	"0f0b",                      // ud2 (#UD)
	"48c7c001000000",            // mov rax, 1
	"488d842400010000",          // lea rax, [rsp+0x100]
	"2e3e90",                    // prefixed nop
	"c4e27d18c0",                // vbroadcastss ymm0, xmm0 (VEX3)
	"c5fc77",                    // vzeroall (VEX2)
	"0f05",                      // syscall (trapped by seccomp)
	"f390",                      // pause
	"0f01d0",                    // xgetbv
	"c70500000000" + "7b000000", // mov dword [rip+0], 123 (writes the code page: faults)
}

// TestHWLengthObjdump cross-checks the hardware length oracle with objdump
// (KBOOST_ORACLE=1). objdump follows AMD64 semantics by default and Intel's
// with -M intel64; the test picks the host's vendor.
func TestHWLengthObjdump(t *testing.T) {
	oracle(t)
	s, err := New(kernelsim.X86_64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	vendor := "amd64"
	if b, _ := os.ReadFile("/proc/cpuinfo"); strings.Contains(string(b), "GenuineIntel") {
		vendor = "intel64"
	}
	var bs [][]byte
	for _, h := range hwCases {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, append(b, 0xCC, 0xCC, 0xCC)) // extra bytes the CPU must not take
	}
	out := make([]HWLen, len(bs))
	if err := s.HWLengths(bs, out); err != nil {
		t.Fatal(err)
	}
	for i, h := range hwCases {
		offs, text := objdumpInsns(t, bs[i], 0, "i386:x86-64", "-M", vendor)
		want := len(bs[i])
		if len(offs) > 1 {
			want = offs[1]
		}
		if out[i].N != want || out[i].Outcome > LenRejected {
			t.Errorf("%s (%s): CPU %d %v, objdump %d", h, text[0], out[i].N, out[i].Outcome, want)
		} else {
			t.Logf("%-22s %-40s %2d %v (%d probes)", h, text[0], out[i].N, out[i].Outcome, out[i].Probes)
		}
	}
	// too short and single-instruction helpers
	n, o, err := HWLength([]byte{0x48, 0xB8, 1, 2}, decode.Mode64)
	if err != nil || o != LenTooShort || n != 4 {
		t.Errorf("truncated movabs: %d %v %v", n, o, err)
	}
	n, o, err = HWLength([]byte{0x0F, 0x0B}, decode.Mode64)
	if err != nil || o != LenRejected || n != 2 {
		t.Errorf("ud2: %d %v %v", n, o, err)
	}
}

// TestHWLengthQuick runs without objdump: outcomes that do not depend on it.
func TestHWLengthQuick(t *testing.T) {
	s, err := New(kernelsim.X86_64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bs := [][]byte{{0x90, 0x90}, {0x0F, 0x0B}, {0xF4}, {0x66}, {0x0F, 0x05}}
	want := []LengthOutcome{LenExecuted, LenRejected, LenFaulted, LenTooShort, LenFaulted}
	out := make([]HWLen, len(bs))
	if err := s.HWLengths(bs, out); err != nil {
		t.Fatal(err)
	}
	for i := range bs {
		if out[i].Outcome != want[i] {
			t.Errorf("% x: %v, want %v", bs[i], out[i].Outcome, want[i])
		}
	}
	if out[0].N != 1 {
		t.Errorf("nop nop: length %d", out[0].N)
	}
	// i386: the same outcomes on the CPU (SYSCALL left out: compat mode
	// runs it on AMD and raises #UD on Intel); none under an emulator
	for _, o := range execOptions(t, kernelsim.I386) {
		s32, err := NewWithOptions(kernelsim.I386, o)
		if err != nil {
			t.Fatal(err)
		}
		defer s32.Close()
		bs32 := bs[:4]
		out32 := make([]HWLen, len(bs32))
		err = s32.HWLengths(bs32, out32)
		if s32.Emulator() != "" {
			if !errors.Is(err, decode.ErrNotSupported) {
				t.Errorf("i386 under %s: %v, want errNotSupported", s32.Emulator(), err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("i386 on the CPU: %v", err)
		}
		for i := range bs32 {
			if out32[i].Outcome != want[i] {
				t.Errorf("i386 % x: %v, want %v", bs32[i], out32[i].Outcome, want[i])
			}
		}
		if out32[0].N != 1 {
			t.Errorf("i386 nop nop: length %d", out32[0].N)
		}
	}
}
