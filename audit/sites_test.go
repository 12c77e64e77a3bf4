package audit

import (
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
)

// kernel/static_call_inline.c addr_conflict: a site at S reserves
// [S, S+CALL_INSN_SIZE), so a probe on the int3 padding of a tail site
// patched to `ret; int3 x4` is EINVAL (seen on Debian 6.12 and 7.2 amd64).
func TestStaticCallWidth(t *testing.T) {
	tab := &kimage.Table{Name: "static-call sites", Source: kimage.SourceSection, Addrs: kimage.NewAddrSet([]uint64{0x1000, 0x1005})}
	st := widthTable(tab, 5)
	for a, want := range map[uint64]bool{0xfff: false, 0x1000: true, 0x1004: true, 0x1005: true, 0x1009: true, 0x100a: false} {
		if hit, known := st.Overlaps(boost.Span{Start: a, End: a + 1}); hit != want || !known {
			t.Errorf("%#x: reserved %v (known %v), want %v", a, hit, known, want)
		}
	}
	if widthTable(&kimage.Table{Name: "static-call sites"}, 5) != nil {
		t.Error("a missing table gave sites")
	}
}
