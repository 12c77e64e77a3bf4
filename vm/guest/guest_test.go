package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestPackUnpack(t *testing.T) {
	entries := []Entry{{"b.txt", []byte("second")}, {"a.json", []byte(`{"x":1}`)}, {"empty", nil}, {"big", bytes.Repeat([]byte("0123456789abcdef "), 100000)}}
	p, err := Pack(entries)
	if err != nil {
		t.Fatal(err)
	}
	files, order, err := Unpack(p, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "b.txt,a.json,empty,big" {
		t.Errorf("order %v", order)
	}
	for _, e := range entries {
		if !bytes.Equal(files[e.Name], e.Data) {
			t.Errorf("%s differs", e.Name)
		}
	}
	if _, _, err := Unpack(p, 1000); err == nil {
		t.Error("limit not enforced")
	}
	if _, err := Pack([]Entry{{"a", nil}, {"a", nil}}); err == nil {
		t.Error("duplicate names accepted")
	}
}

func TestParsePoint(t *testing.T) {
	good := map[string]struct {
		sym string
		off uint64
	}{
		"vfs_read":          {"vfs_read", 0},
		"vfs_read+0":        {"vfs_read", 0},
		"vfs_read+17":       {"vfs_read", 17},
		"vfs_read+0x1f":     {"vfs_read", 31},
		"__x64_sys_read+4":  {"__x64_sys_read", 4},
		"foo.constprop.0+1": {"foo.constprop.0", 1},
	}
	for in, w := range good {
		sym, off, err := ParsePoint(in)
		if err != nil || sym != w.sym || off != w.off {
			t.Errorf("ParsePoint(%q) = %q, %d, %v; want %q, %d", in, sym, off, err, w.sym, w.off)
		}
	}
	// Anything that could smuggle a second command or argument into kprobe_events,
	// or that the kernel would read differently from Go (octal, prefixes).
	for _, in := range []string{"", "+4", "vfs_read+", "vfs read", "vfs_read\np:x y", "a;b", "vfs_read+-1",
		"vfs_read+0x", "vfs_read+010", "vfs_read+0b1", "vfs_read+1_0", "1abc", "vfs_read+4+4", "a:b", "vfs_read%x", "vfs_read+0X10"} {
		if _, _, err := ParsePoint(in); err == nil {
			t.Errorf("ParsePoint(%q) accepted", in)
		} else {
			var pe *PointError
			if !errors.As(err, &pe) {
				t.Errorf("ParsePoint(%q): %T, want *PointError", in, err)
			}
		}
	}
}

func FuzzParsePoint(f *testing.F) {
	for _, s := range []string{"vfs_read+0x4", "a+1", "x\n", "+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sym, off, err := ParsePoint(s)
		if err != nil {
			return
		}
		// An accepted point holds only symbol characters, '+' and hex digits / 'x'.
		for _, c := range s {
			if !(c == '_' || c == '.' || c == '+' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				t.Fatalf("accepted %q with %q", s, c)
			}
		}
		if sym == "" || off > 1<<32 {
			t.Fatalf("%q -> %q %d", s, sym, off)
		}
	})
}

func FuzzUnpack(f *testing.F) {
	p, _ := Pack([]Entry{{"a", []byte("hello")}})
	f.Add(p)
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = Unpack(b, 1<<20)
	})
}

func init() {
	Register("test-ok", func(e *Env, args json.RawMessage) error {
		e.Put("ok.txt", args)
		return nil
	})
	Register("test-fail", func(e *Env, _ json.RawMessage) error {
		e.Put("partial.txt", []byte("x"))
		return errors.New("it broke")
	})
	Register("test-panic", func(e *Env, _ json.RawMessage) error { panic("boom") })
}

func TestEnvRun(t *testing.T) {
	var log bytes.Buffer
	e := NewEnv(&log)
	reps := e.Run([]Step{
		{Name: "test-ok", Args: json.RawMessage(`{"a":1}`)},
		{Name: "test-panic"},
		{Name: "no-such-step"},
		{Name: "test-fail"},
	})
	if len(reps) != 4 {
		t.Fatalf("%d reports", len(reps))
	}
	if reps[0].Error != "" || len(reps[0].Outputs) != 1 || reps[0].Outputs[0] != "ok.txt" {
		t.Errorf("ok step: %+v", reps[0])
	}
	if !strings.Contains(reps[1].Error, "panic: boom") {
		t.Errorf("panic step: %+v", reps[1])
	}
	if !strings.Contains(reps[2].Error, "unknown step") {
		t.Errorf("unknown step: %+v", reps[2])
	}
	if reps[3].Error != "it broke" || len(reps[3].Outputs) != 1 {
		t.Errorf("failing step: %+v", reps[3])
	}
	if got := e.Entries(); len(got) != 2 || string(got[0].Data) != `{"a":1}` {
		t.Errorf("entries %+v", got)
	}
	if !strings.Contains(log.String(), "step test-fail failed: it broke") {
		t.Errorf("log: %s", log.String())
	}
}
