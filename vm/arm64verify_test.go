package vm

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/kboost/kboost/vm/guest"
)

func TestA64Mnemonic(t *testing.T) {
	// Encodings from the Arm ARM: RET, NOP, PACIASP (HINT #25), BL, MRS x0, SP_EL0.
	for w, want := range map[uint32]string{
		0xd65f03c0: "ret",
		0xd503201f: "nop",
		0xd503233f: "hint#0x19",
		0x94000000: "bl",
		0xd5384100: "mrs s3_0_c4_c1_0",
	} {
		if got := A64Mnemonic(w); got != want {
			t.Errorf("A64Mnemonic(%#08x) = %q, want %q", w, got, want)
		}
	}
	// An LSE atomic x/arch does not know still gets a name.
	if got := A64Mnemonic(0xf8200020); got == "" {
		t.Errorf("empty name for an LSE word")
	}
}

func TestARM64Summary(t *testing.T) {
	v := &ARM64Verification{Report: guest.ARM64Report{Arch: "arm64"}}
	v.Report.Release = "6.1.0-test-arm64"
	v.Report.Funcs = []guest.KernelFunc{{Name: "f", Traced: true}, {Name: "g"}}
	v.Report.Records = []guest.VerifyRecord{
		{Func: "f", Off: 0, Boundary: true, Bytes: "e9031eaa", Round: 1, Kernel: guest.Outcome{Addr: 0x10, Slot: "e9031eaac00020d4"}},
		{Func: "f", Off: 4, Boundary: true, Bytes: "1f2003d5", Round: 1, Kernel: guest.Outcome{Errno: "EINVAL"}},
		{Func: "f", Off: 8, Boundary: true, Bytes: "c0035fd6", Round: 1, Kernel: guest.Outcome{Addr: 0x18}},
		{Func: "f", Off: 1, Round: 1, Kernel: guest.Outcome{Errno: "EINVAL"}},
		{Func: "g", Off: 0, Boundary: true, Bytes: "c0035fd6", Round: 1, Kernel: guest.Outcome{Errno: "EINVAL"}},
		{Func: "g", Off: 4, Boundary: true, Bytes: "c0035fd6", Round: -1},
	}
	s := v.Summarize()
	if s.Probes != 5 || s.Boundary != 4 || s.Misaligned != 1 || s.NotRun != 1 {
		t.Errorf("counts %+v", s)
	}
	if s.Outcomes["slot"] != 1 || s.Outcomes["noslot"] != 1 || s.Outcomes["EINVAL"] != 2 || s.MisalignedOutcomes["EINVAL"] != 1 {
		t.Errorf("outcomes %v %v", s.Outcomes, s.MisalignedOutcomes)
	}
	if s.Notrace != 1 || s.NotraceAllRefused != 1 {
		t.Errorf("notrace %d, all refused %d", s.Notrace, s.NotraceAllRefused)
	}
	if s.ByMnemonic["ret"]["noslot"] != 1 || s.ByMnemonic["ret"]["notrace-fn"] != 1 {
		t.Errorf("by mnemonic %v", s.ByMnemonic)
	}
	var buf bytes.Buffer
	if err := v.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"policy none", "2 functions", "ret", "EINVAL=2"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	// With predictions: agreement per field, disagreements listed.
	v.Report.Predicted, v.Report.Policy = true, "test"
	v.Report.Records[1].Predicted = guest.Outcome{Errno: "EINVAL"}
	v.Report.Records[0].Predicted = guest.Outcome{Addr: 0x10, Slot: "e9031eaac00020d4"}
	v.Report.Records[2].Predicted = guest.Outcome{Errno: "EINVAL"}
	v.Report.Records[3].Predicted = guest.Outcome{Errno: "EINVAL"}
	v.Report.Records[4].Predicted = guest.Outcome{Errno: "EINVAL"}
	s = v.Summarize()
	if s.Agree["errno"] != 4 || s.Disagree["errno"] != 1 || s.Agree["slot"] != 1 || s.AllAgree != 4 {
		t.Errorf("agreement %v / %v, all %d", s.Agree, s.Disagree, s.AllAgree)
	}
	buf.Reset()
	if err := v.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "DISAGREE f+0x8") {
		t.Errorf("disagreement not listed:\n%s", buf.String())
	}
}

// synthImage builds an Image-shaped buffer: text at 0x10000 (NOPs and a few
// RETs), a jump table and an exception table of n entries each pointing into
// it, and the matching record.
func synthImage(n int) ([]byte, *guest.ARM64Report) {
	const base = 0xffff800008000000
	const text, textLen = 0x10000, 0x4000
	img := make([]byte, 0x20000)
	le := binary.LittleEndian
	for i := text; i < text+textLen; i += 4 {
		le.PutUint32(img[i:], 0xD503201F) // NOP
	}
	jt, et := 0x18000, 0x1C000
	for k := 0; k < n; k++ {
		p := jt + 16*k
		code, target := text+8*k, text+8*k+4
		le.PutUint32(img[p:], uint32(int32(code-p)))
		le.PutUint32(img[p+4:], uint32(int32(target-(p+4))))
		le.PutUint64(img[p+8:], uint64(0x1F000-(p+8)))
		q := et + 12*k
		insn, fixup := text+16*k, text+textLen-4
		le.PutUint32(img[q:], uint32(int32(insn-q)))
		le.PutUint32(img[q+4:], uint32(int32(fixup-(q+4))))
		le.PutUint16(img[q+8:], 3) // EX_TYPE_UACCESS_ERR_ZERO
	}
	rep := &guest.ARM64Report{TextStart: base + text, TextEnd: base + text + textLen}
	rep.Funcs = []guest.KernelFunc{{Name: "f", Addr: base + text, Size: 64, Bytes: hex.EncodeToString(img[text : text+64])}}
	return img, rep
}

func TestFindARM64Tables(t *testing.T) {
	img, rep := synthImage(100)
	tb, err := FindARM64Tables(img, rep)
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.JumpLabels) != 100 || len(tb.ExTable) != 100 {
		t.Fatalf("%d jump labels, %d extable entries, want 100 each", len(tb.JumpLabels), len(tb.ExTable))
	}
	if tb.JumpLabels[1]-tb.JumpLabels[0] != 8 || tb.JumpLabels[0] != rep.TextStart || tb.ExTable[2] != rep.TextStart+32 {
		t.Errorf("addresses %#x %#x", tb.JumpLabels[:2], tb.ExTable[:3])
	}
	// A record whose bytes are not the Image's: no tables.
	rep.Funcs[0].Bytes = strings.Repeat("00", 64)
	if _, err := FindARM64Tables(img, rep); err == nil {
		t.Error("an Image not matching the record was used")
	}
	// Too few entries: no tables.
	img, rep = synthImage(10)
	if _, err := FindARM64Tables(img, rep); err == nil {
		t.Error("10-entry tables accepted")
	}
}

func FuzzFindARM64Tables(f *testing.F) {
	img, _ := synthImage(70)
	f.Add(img[0x18000:0x19000], uint16(0))
	f.Fuzz(func(t *testing.T, tail []byte, start uint16) {
		img, rep := synthImage(70)
		copy(img[0x18000+int(start)%0x4000:], tail)
		tb, err := FindARM64Tables(img, rep)
		if err != nil {
			return
		}
		for _, a := range append(append([]uint64{}, tb.JumpLabels...), tb.ExTable...) {
			if a < rep.TextStart || a >= rep.TextEnd || a%4 != 0 {
				t.Fatalf("address %#x outside the text", a)
			}
		}
	})
}
