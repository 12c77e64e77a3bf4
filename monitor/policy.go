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
// optionally only when one of its path arguments starts with Prefix and
// only when a function named Caller is on its user stack (frame pointers).
type Rule struct {
	Line    int
	Deny    bool
	Syscall string // "*" for any
	Prefix  string // "" for any
	Caller  string // "" for any
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
	if r.Caller != "" {
		s += " caller=" + r.Caller
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
		if len(f) < 2 || len(f) > 4 || (f[0] != "allow" && f[0] != "deny") {
			return nil, fmt.Errorf("%w: line %d: %q: want `allow|deny SYSCALL|* [path=PREFIX] [caller=FUNC]`", ErrPolicy, ln, sc.Text())
		}
		rule := Rule{Line: ln, Deny: f[0] == "deny", Syscall: f[1]}
		for _, opt := range f[2:] {
			if v, ok := strings.CutPrefix(opt, "path="); ok && v != "" && rule.Prefix == "" {
				rule.Prefix = v
			} else if v, ok := strings.CutPrefix(opt, "caller="); ok && v != "" && rule.Caller == "" {
				rule.Caller = v
			} else {
				return nil, fmt.Errorf("%w: line %d: %q: after the call come path=PREFIX and caller=FUNC, once each", ErrPolicy, ln, opt)
			}
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
// arguments and these functions on its stack, or nil (allowed by default).
func (p *Policy) Decide(name string, paths, callers []string) *Rule {
	if p == nil {
		return nil
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.Syscall != "*" && r.Syscall != name {
			continue
		}
		if r.Caller != "" && !contains(callers, r.Caller) {
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

// NeedsStack says whether some rule names a caller.
func (p *Policy) NeedsStack() bool {
	if p == nil {
		return false
	}
	for _, r := range p.Rules {
		if r.Caller != "" {
			return true
		}
	}
	return false
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
