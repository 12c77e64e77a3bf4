package kimage

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
)

// KConfig is a parsed kernel configuration (.config format). Values are stored
// as written: "y", "m", a number, or a string without its quotes; options shown
// as "# CONFIG_X is not set" are stored as "n".
type KConfig struct {
	vals map[string]string
}

func configKey(name string) string {
	if strings.HasPrefix(name, "CONFIG_") {
		return name
	}
	return "CONFIG_" + name
}

// Bool reports whether the option is set to "y". The name may omit "CONFIG_".
func (c *KConfig) Bool(name string) bool {
	v, _ := c.Value(name)
	return v == "y"
}

// Tristate returns "y", "m" or "n" (also for an option that is absent).
func (c *KConfig) Tristate(name string) string {
	v, ok := c.Value(name)
	if !ok || (v != "y" && v != "m") {
		return "n"
	}
	return v
}

// Value returns the option's value and whether the configuration mentions it.
func (c *KConfig) Value(name string) (string, bool) {
	if c == nil {
		return "", false
	}
	v, ok := c.vals[configKey(name)]
	return v, ok
}

// Set overrides an option (e.g. from a command-line flag).
func (c *KConfig) Set(name, value string) {
	if c.vals == nil {
		c.vals = map[string]string{}
	}
	c.vals[configKey(name)] = value
}

// Len returns the number of options recorded.
func (c *KConfig) Len() int {
	if c == nil {
		return 0
	}
	return len(c.vals)
}

// ParseKConfig parses a kernel config, plain or gzip-compressed (as
// /proc/config.gz). Lines that are neither assignments nor comments are errors.
func ParseKConfig(b []byte) (*KConfig, error) {
	if bytes.HasPrefix(b, []byte{0x1F, 0x8B}) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, corrupt("gzip kernel config", 0, "%v", err)
		}
		plain, err := io.ReadAll(io.LimitReader(zr, 64<<20))
		if err != nil {
			return nil, corrupt("gzip kernel config", -1, "%v", err)
		}
		b = plain
	}
	c := &KConfig{vals: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if strings.HasPrefix(s, "#") {
			rest := strings.TrimSpace(s[1:])
			if name, ok := strings.CutSuffix(rest, " is not set"); ok && strings.HasPrefix(name, "CONFIG_") && validConfigName(name) {
				c.vals[name] = "n"
			}
			continue
		}
		name, val, ok := strings.Cut(s, "=")
		if !ok || !strings.HasPrefix(name, "CONFIG_") || !validConfigName(name) {
			return nil, &FormatError{What: fmt.Sprintf("kernel config line %d", line), Off: -1, Err: ErrCorrupt,
				Why: fmt.Sprintf("want CONFIG_NAME=value or a comment, got %q", truncate(s))}
		}
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			val = unquoteConfig(val[1 : len(val)-1])
		}
		c.vals[name] = val
	}
	if err := sc.Err(); err != nil {
		return nil, &FormatError{What: fmt.Sprintf("kernel config line %d", line+1), Off: -1, Err: ErrCorrupt, Why: err.Error()}
	}
	return c, nil
}

func validConfigName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// unquoteConfig undoes Kconfig's escaping of '"' and '\\' inside strings.
func unquoteConfig(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// LoadKConfig reads a config file (plain or gzip).
func LoadKConfig(path string) (*KConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseKConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
