package loader

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseKprobesList(t *testing.T) {
	// Lines as Linux 6.1's report_probe prints them: flags without separators.
	in := "ffffffff81234560  k  vfs_read+0x0    [DISABLED][FTRACE]\n" +
		"ffffffff81234571  k  vfs_read+0x11    [OPTIMIZED]\n" +
		"ffffffffc0001000  r  foo_exit+0x0  foomod [GONE]\n" +
		"ffffffff81000000  k  _text+0x0    \n" +
		"garbage\n\nzz k x+0x0\n"
	got := ParseKprobesList([]byte(in))
	want := []ListEntry{
		{Addr: 0xffffffff81234560, Kind: "k", Point: "vfs_read+0x0", Flags: []string{"DISABLED", "FTRACE"}},
		{Addr: 0xffffffff81234571, Kind: "k", Point: "vfs_read+0x11", Flags: []string{"OPTIMIZED"}},
		{Addr: 0xffffffffc0001000, Kind: "r", Point: "foo_exit+0x0", Module: "foomod", Flags: []string{"GONE"}},
		{Addr: 0xffffffff81000000, Kind: "k", Point: "_text+0x0"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if !got[0].Has("FTRACE") || got[0].Has("OPTIMIZED") || !got[1].Has("OPTIMIZED") {
		t.Error("Has")
	}
}

func TestParseEventsProfile(t *testing.T) {
	ev := ParseEvents([]byte("p:kboost/vfs_read vfs_read+0\nr16:kboost_x/ret_1 do_sys_open+0 arg1=%ax\nbogus\np:noslash x\n"))
	want := []Event{{"p", "kboost", "vfs_read", "vfs_read+0"}, {"r", "kboost_x", "ret_1", "do_sys_open+0"}}
	if !reflect.DeepEqual(ev, want) {
		t.Errorf("events %+v", ev)
	}
	pr := ParseProfile([]byte("  vfs_read   12   0\nkboost/p1 3 1\nbad line here x\n"))
	if len(pr) != 2 || pr[0] != (Profile{"vfs_read", 12, 0}) || pr[1] != (Profile{"kboost/p1", 3, 1}) {
		t.Errorf("profile %+v", pr)
	}
}

// TestSpecInjection: nothing that could add a command, an argument or a second
// line to kprobe_events passes validation.
func TestSpecInjection(t *testing.T) {
	bad := []string{
		"vfs_read\n-:kboost/x", "vfs_read x=%ax", "vfs_read%return%return", "-:kboost/x",
		"vfs_read+0x10 y", "vfs_read+-1", "vfs_read+010", "vfs_read+0x", "", "1abc",
		"a/b", "vfs_read;echo", "vfs_read+4294967296", "mod:sym:x", "vfs_read\x00", "vfs_read+1%return",
		strings.Repeat("a", 128),
	}
	for _, p := range bad {
		s, err := ParseSpec(p)
		var se *SpecError
		if err == nil || !errors.As(err, &se) {
			t.Errorf("ParseSpec(%q) = %+v, %v: want a SpecError", p, s, err)
		}
	}
	for _, s := range []Spec{{Symbol: "vfs_read", Group: "other"}, {Symbol: "vfs_read", Event: "a b"}, {Symbol: "vfs_read", Group: "kboost/x"}, {Symbol: "vfs_read", Event: "9x"}} {
		if _, err := s.Definition(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	good := map[string]string{
		"vfs_read":            "p:kboost/vfs_read vfs_read+0x0",
		"vfs_read+0x11":       "p:kboost/vfs_read_11 vfs_read+0x11",
		"vfs_read+17":         "p:kboost/vfs_read_11 vfs_read+0x11",
		"do_sys_open%return":  "r:kboost/do_sys_open_ret do_sys_open+0x0",
		"ext4:ext4_file_open": "p:kboost/ext4_file_open ext4:ext4_file_open+0x0",
		"foo.constprop.0+0x4": "p:kboost/foo_constprop_0_4 foo.constprop.0+0x4",
	}
	for in, want := range good {
		s, err := ParseSpec(in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", in, err)
			continue
		}
		if got, err := s.Definition(); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestSpecAddr: raw kernel addresses parse to "p:GROUP/addr_HEX 0xHEX" (the
// name encodes the address, which kprobe_events shows hashed); anything else
// that starts like an address is refused with the reason.
func TestSpecAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0xffffffff81234567":        "p:kboost/addr_ffffffff81234567 0xffffffff81234567",
		"kernel:0xffffffff81234567": "p:kboost/addr_ffffffff81234567 0xffffffff81234567",
		"0xFFFFFFFFC0001000":        "p:kboost/addr_ffffffffc0001000 0xffffffffc0001000",
	} {
		s, err := ParseSpec(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		d, err := s.Definition()
		if err != nil || d != want {
			t.Errorf("%q: %q %v, want %q", in, d, err, want)
		}
		n, _ := s.Normalize()
		if EventAddr(n.Event) != s.Addr || s.Point() != want[strings.IndexByte(want, ' ')+1:] {
			t.Errorf("%q: event %s, point %s", in, n.Event, s.Point())
		}
	}
	for in, why := range map[string]string{
		"0x1234":                     "not a kernel address",
		"0x0":                        "not a kernel address",
		"0xffffffff81234567+4":       "hex digits",
		"0xffffffff81234567%return":  "hex digits",
		"0x1ffffffff81234567":        "hex digits",
		"0xffffffff8123456g":         "hex digits",
		"0x":                         "hex digits",
		"0x-1":                       "hex digits",
		"kernel:0xffffffff8123\n-:x": "hex digits",
	} {
		if _, err := ParseSpec(in); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want %q", in, err, why)
		}
	}
	for _, s := range []Spec{
		{Addr: 0xffffffff81000000, Symbol: "vfs_read"},
		{Addr: 0xffffffff81000000, Offset: 4},
		{Addr: 0xffffffff81000000, Return: true},
		{Addr: 0x400000},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if EventAddr("addr_12") != 0 || EventAddr("vfs_read") != 0 || EventAddr("addr_fffffffff81234567") != 0 {
		t.Error("EventAddr accepts non-addresses")
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := ParseCPUList("0-3,5,7-8")
	if err != nil || !reflect.DeepEqual(got, []int{0, 1, 2, 3, 5, 7, 8}) {
		t.Errorf("%v %v", got, err)
	}
	for _, b := range []string{"", "x", "3-1", "-1", "0-99999999"} {
		if _, err := ParseCPUList(b); err == nil {
			t.Errorf("%q accepted", b)
		}
	}
}

func FuzzParsers(f *testing.F) {
	f.Add([]byte("ffffffff81234560  k  vfs_read+0x0    [DISABLED][FTRACE]\n"))
	f.Add([]byte("p:kboost/x vfs_read+0\n x 1 2\n"))
	f.Add([]byte("1 k x [[[]]] [\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, e := range ParseKprobesList(b) {
			_ = e.Has("FTRACE")
		}
		ParseEvents(b)
		ParseProfile(b)
		if a := EventAddr(string(b)); a != 0 && a < MinKernelAddr {
			t.Errorf("EventAddr(%q) = %#x", b, a)
		}
		half := len(b) / 2
		if MaskedEqual(string(b[:half]), string(b[half:])) && (half%2 == 1 || half == 0) {
			t.Errorf("MaskedEqual accepted odd-length hex %q", b)
		}
		if d, ok := DetourTarget(0xffffffff81000000, b); ok && (len(b) < 5 || b[0] != 0xE9) {
			t.Errorf("DetourTarget(%x) = %#x", b, d)
		}
		ParseCPUList(string(b))
		if s, err := ParseSpec(string(b)); err == nil {
			d, err := s.Definition()
			if err != nil || strings.ContainsAny(d, "\n\r\t") || strings.Count(d, " ") != 1 {
				t.Errorf("ParseSpec(%q) gave definition %q, %v", b, d, err)
			}
		}
	})
}

func TestParseBlacklist(t *testing.T) {
	got := ParseBlacklist([]byte("0xffffffff81000000-0xffffffff81000010\tfoo\n0xffffffff81000020-0xffffffff81000030\tbar\nbad\n0x2-0x1\tx\n"))
	want := []BlacklistRange{{0xffffffff81000000, 0xffffffff81000010, "foo"}, {0xffffffff81000020, 0xffffffff81000030, "bar"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%+v", got)
	}
}
