package kimage

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kboost/kboost/decode"
)

const sampleConfig = `#
# Automatically generated file; DO NOT EDIT.
# Linux/x86 6.1.0 Kernel Configuration
#
CONFIG_CC_VERSION_TEXT="gcc (Debian 12.2.0-14) 12.2.0"
CONFIG_64BIT=y
CONFIG_PREEMPTION=y
# CONFIG_PREEMPT_NONE is not set
CONFIG_KPROBES=y
CONFIG_EXT4_FS=m
CONFIG_NR_CPUS=8192
CONFIG_LOCALVERSION="a \"quoted\" word"
CONFIG_HZ=250

`

func TestParseKConfig(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(sampleConfig))
	w.Close()
	for name, in := range map[string][]byte{"plain": []byte(sampleConfig), "gzip": gz.Bytes()} {
		c, err := ParseKConfig(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !c.Bool("PREEMPTION") || !c.Bool("CONFIG_KPROBES") || c.Bool("PREEMPT_NONE") || c.Bool("EXT4_FS") || c.Bool("MISSING") {
			t.Errorf("%s: Bool wrong", name)
		}
		if c.Tristate("EXT4_FS") != "m" || c.Tristate("PREEMPT_NONE") != "n" || c.Tristate("MISSING") != "n" {
			t.Errorf("%s: Tristate wrong", name)
		}
		if v, ok := c.Value("NR_CPUS"); v != "8192" || !ok {
			t.Errorf("%s: NR_CPUS %q %v", name, v, ok)
		}
		if v, _ := c.Value("CC_VERSION_TEXT"); v != "gcc (Debian 12.2.0-14) 12.2.0" {
			t.Errorf("%s: string %q", name, v)
		}
		if v, _ := c.Value("LOCALVERSION"); v != `a "quoted" word` {
			t.Errorf("%s: escaped string %q", name, v)
		}
		if v, ok := c.Value("PREEMPT_NONE"); v != "n" || !ok {
			t.Errorf("%s: not-set option %q %v", name, v, ok)
		}
		if _, ok := c.Value("MISSING"); ok {
			t.Errorf("%s: MISSING found", name)
		}
		if c.Len() != 9 {
			t.Errorf("%s: Len %d, want 9", name, c.Len())
		}
	}
	if _, err := ParseKConfig([]byte("CONFIG_X=y\nthis is junk\n")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("junk line: %v", err)
	}
	var nilc *KConfig
	if nilc.Bool("X") || nilc.Len() != 0 {
		t.Error("nil KConfig not empty")
	}
	p := filepath.Join(t.TempDir(), "config")
	os.WriteFile(p, gz.Bytes(), 0o644)
	if c, err := LoadKConfig(p); err != nil || !c.Bool("64BIT") {
		t.Errorf("LoadKConfig: %v", err)
	}
}

func TestFindRunningConfig(t *testing.T) {
	c, where, err := FindRunningConfig()
	if err != nil {
		if !errors.Is(err, ErrNoConfig) && !errors.Is(err, decode.ErrNotSupported) {
			t.Fatalf("FindRunningConfig: %v, want a config or ErrNoConfig", err)
		}
		t.Logf("no running config here: %v", err)
		return
	}
	if c.Len() == 0 || where == "" {
		t.Errorf("empty config from %q", where)
	}
}
