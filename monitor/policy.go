package monitor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrPolicy marks a malformed policy file.
var ErrPolicy = errors.New("monitor: policy")

// Rule is one line of a policy: allow or deny a call (or any call, "*")
// optionally only when one of its path arguments starts with Prefix.
type Rule struct {
	Line    int
	Deny    bool
	Syscall string // "*" for any
	Prefix  string // "" for any
}

func (r Rule) String() string {
	s := "allow"
	if r.Deny {
		s = "deny"
	}
	s += " " + r.Syscall
	if r.Prefix != "" {
		s += " path=" + r.Prefix
	}
	return fmt.Sprintf("%s (line %d)", s, r.Line)
}

// Policy is an ordered rule list; the first matching rule decides, and a
// call no rule matches is allowed.
type Policy struct{ Rules []Rule }

// maxRules bounds a policy's size (memory stays bounded).
const maxRules = 10000

// ParsePolicy reads lines `allow|deny SYSCALL|* [path=PREFIX]`; # starts a
// comment.
func ParsePolicy(r io.Reader) (*Policy, error) {
	p := &Policy{}
	sc := bufio.NewScanner(r)
	ln := 0
	for sc.Scan() {
		ln++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 || len(f) > 3 || (f[0] != "allow" && f[0] != "deny") {
			return nil, fmt.Errorf("%w: line %d: %q: want `allow|deny SYSCALL|* [path=PREFIX]`", ErrPolicy, ln, sc.Text())
		}
		rule := Rule{Line: ln, Deny: f[0] == "deny", Syscall: f[1]}
		if len(f) == 3 {
			v, ok := strings.CutPrefix(f[2], "path=")
			if !ok || v == "" {
				return nil, fmt.Errorf("%w: line %d: %q: the third field is path=PREFIX", ErrPolicy, ln, f[2])
			}
			rule.Prefix = v
		}
		if len(p.Rules) == maxRules {
			return nil, fmt.Errorf("%w: more than %d rules", ErrPolicy, maxRules)
		}
		p.Rules = append(p.Rules, rule)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	return p, nil
}

// Decide returns the rule deciding a call named name with these path
// arguments, or nil (allowed by default).
func (p *Policy) Decide(name string, paths []string) *Rule {
	if p == nil {
		return nil
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.Syscall != "*" && r.Syscall != name {
			continue
		}
		if r.Prefix == "" {
			return r
		}
		for _, s := range paths {
			if strings.HasPrefix(s, r.Prefix) {
				return r
			}
		}
	}
	return nil
}

// Names lists the calls the policy names ("*" when any call may match).
func (p *Policy) Names() []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, r := range p.Rules {
		out = append(out, r.Syscall)
	}
	return out
}
