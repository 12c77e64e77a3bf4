package boost

import (
	"testing"

	"github.com/kboost/kboost/decode"
)

// A Thumb function: every boundary decides as the single instruction does,
// and a probe on the second halfword of a 32-bit instruction reads that
// halfword (the kernel has no boundary check on ARM).
func TestAuditThumbFunction(t *testing.T) {
	var b []byte
	for _, v := range []uint32{0xb510, 0xe92d4ff0, 0xbf08, 0x2001, 0xf8d00004, 0xbd10} {
		b = append(b, a32Mem(v, true)...)
	}
	env := linux61Thumb.DefaultEnv()
	a, err := linux61Thumb.AuditFunc(Func{Name: "f", Addr: a32TestAddr, Bytes: b}, env)
	if err != nil {
		t.Fatal(err)
	}
	wantOffs := []uint64{0, 2, 6, 8, 10, 14}
	if len(a.Entries) != len(wantOffs) {
		t.Fatalf("%d entries, want %d", len(a.Entries), len(wantOffs))
	}
	for i, e := range a.Entries {
		if e.Off != wantOffs[i] {
			t.Fatalf("entry %d at +%d, want +%d", i, e.Off, wantOffs[i])
		}
		d := linux61Thumb.ClassifyBytes(b[e.Off:], decode.ModeT32, a32TestAddr+e.Off)
		if d.String() != e.Decision.String() || d.SlotLen != e.Decision.SlotLen {
			t.Errorf("+%d: audit %v, single instruction %v", e.Off, e.Decision.String(), d.String())
		}
	}
	// +4 is the second halfword of e92d 4ff0: 4ff0 is LDR r7, [pc, #960].
	steps, d, err := a.ExplainAt(4)
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != Emulate || d.Reasons[len(d.Reasons)-1].Rule != "thumb.simulate.ldr_literal" || len(steps) == 0 {
		t.Errorf("+4: %v", d.String())
	}
}

// An ARM function with its mcount call known from the site tables: the call
// is refused (no KPROBES_ON_FTRACE on arm), a misaligned offset is refused,
// and the other words decide as single instructions.
func TestAuditARMFunction(t *testing.T) {
	words := []uint32{0xe52de004, 0xebfffffe, 0xe1a0c00d, 0xe8bd8000}
	var b []byte
	for _, w := range words {
		b = append(b, a32Mem(w, false)...)
	}
	env := linux61ARM.DefaultEnv()
	env.Sites = &StaticSites{FtraceLocs: NewAddrTable([]uint64{a32TestAddr + 4})}
	a, err := linux61ARM.AuditFunc(Func{Name: "f", Addr: a32TestAddr, Bytes: b}, env)
	if err != nil {
		t.Fatal(err)
	}
	if a.FtraceOff != 4 {
		t.Errorf("ftrace location at %d, want 4", a.FtraceOff)
	}
	for _, e := range a.Entries {
		want := linux61ARM.ClassifyBytes(b[e.Off:], decode.ModeA32, a32TestAddr+e.Off)
		if e.Off == 4 {
			if e.Decision.Verdict != Reject || e.Decision.Reasons[0].Rule != rFtraceNoKOF.ID {
				t.Errorf("+4: %v, want the ftrace refusal", e.Decision.String())
			}
			continue
		}
		if e.Decision.String() != want.String() || e.Decision.Optimizable != want.Optimizable {
			t.Errorf("+%d: audit %v, single instruction %v", e.Off, e.Decision.String(), want.String())
		}
	}
	d, err := a.At(2)
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != Reject || d.Reasons[len(d.Reasons)-1].Rule != rA32Align.ID {
		t.Errorf("+2: %v, want arm.align", d.String())
	}
}

// ITSTATE is followed through an IT block: ITTE EQ covers three instructions
// with conditions eq, eq, ne; the probes are accepted (no IT test at
// registration) and the explanation says which condition applies.
func TestAuditThumbITBlock(t *testing.T) {
	var b []byte
	for _, v := range []uint32{0xbf06, 0x2001, 0x2102, 0x2203, 0x2304} { // itte eq; movs x3; movs
		b = append(b, a32Mem(v, true)...)
	}
	a, err := linux61Thumb.AuditFunc(Func{Name: "f", Addr: a32TestAddr, Bytes: b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"", "eq", "eq", "ne", ""}
	for i, e := range a.Entries {
		steps, d, err := a.ExplainAt(e.Off)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, st := range steps {
			if st.Rule == rT32IT.ID {
				got = st.Text[len("inside an IT block (condition ") : len("inside an IT block (condition ")+2]
			}
		}
		if got != want[i] {
			t.Errorf("+%d: IT condition %q, want %q", e.Off, got, want[i])
		}
		if d.Verdict == Reject {
			t.Errorf("+%d: %v", e.Off, d.String())
		}
	}
}
