package vm

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/kboost/kboost/kimage"
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
	if s.Probes != 5 || s.Boundary != 4 || s.NonBound != 1 || s.NotRun != 1 {
		t.Errorf("counts %+v", s)
	}
	if s.Outcomes["slot"] != 1 || s.Outcomes["noslot"] != 1 || s.Outcomes["EINVAL"] != 2 || s.NonBoundOutcomes["EINVAL"] != 1 {
		t.Errorf("outcomes %v %v", s.Outcomes, s.NonBoundOutcomes)
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

// synthImage builds an Image-shaped buffer loaded at base: text at 0x10000
// (distinct ADD immediates), and the matching record of one function.
func synthImage() ([]byte, uint64, *guest.ARM64Report) {
	const base = 0xffff800008000000
	const text, textLen = 0x10000, 0x4000
	img := make([]byte, 0x20000)
	for i := text; i < text+textLen; i += 4 {
		binary.LittleEndian.PutUint32(img[i:], 0x91000000|uint32(i-text)<<8) // add x0, x0, #n
	}
	rep := &guest.ARM64Report{TextStart: base + text, TextEnd: base + text + textLen}
	rep.Funcs = []guest.KernelFunc{{Name: "f", Addr: base + text, Size: 64, Bytes: hex.EncodeToString(img[text : text+64])}}
	return img, base, rep
}

func TestCheckImageMatches(t *testing.T) {
	img, base, rep := synthImage()
	if err := CheckImageMatches(img, base, rep); err != nil {
		t.Fatal(err)
	}
	// One word in 16 patched at boot: still the same kernel.
	rep.Funcs[0].Bytes = "00000000" + rep.Funcs[0].Bytes[8:]
	if err := CheckImageMatches(img, base, rep); err != nil {
		t.Errorf("one patched word: %v", err)
	}
	// Another base, or other bytes: not this kernel.
	if err := CheckImageMatches(img, base+4, rep); err == nil {
		t.Error("an Image at the wrong base was accepted")
	}
	rep.Funcs[0].Bytes = strings.Repeat("00", 64)
	if err := CheckImageMatches(img, base, rep); err == nil {
		t.Error("an Image not matching the record was accepted")
	}
	// A function beyond the Image, or with no bytes: nothing to check.
	rep.Funcs[0].Addr = base + 0x40000
	if err := CheckImageMatches(img, base, rep); err == nil {
		t.Error("a record with nothing to compare was accepted")
	}
}

func TestTablesForPrediction(t *testing.T) {
	tabs := &kimage.Tables{
		JumpLabel: kimage.Table{Name: "jump-label sites", Source: kimage.SourceCode, Addrs: kimage.NewAddrSet([]uint64{8, 4})},
		ExTable:   kimage.Table{Name: "exception table", Source: kimage.SourceCode, Addrs: kimage.NewAddrSet([]uint64{12})},
	}
	got, err := tablesForPrediction(tabs)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.JumpLabels, got.ExTable, got.Ftrace == nil) != "[4 8] [12] true" {
		t.Errorf("tables %+v", got)
	}
	tabs.ExTable = kimage.Table{Name: "exception table", Note: "no anchor"}
	if got, err := tablesForPrediction(tabs); err != nil || got.ExTable != nil || !got.ExTableUnknown || len(got.JumpLabels) != 2 {
		t.Errorf("a missing exception table: %+v, %v", got, err)
	}
	tabs.JumpLabel = kimage.Table{Name: "jump-label sites", Note: "no anchor"}
	if _, err := tablesForPrediction(tabs); err == nil || !strings.Contains(err.Error(), "no anchor") {
		t.Errorf("a missing jump-label table: %v", err)
	}
}
