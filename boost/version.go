package boost

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kboost/kboost/decode"
)

// kernelVersions are the modelled kernel versions, oldest first, with the
// policy of each instruction set. 32-bit ARM's probe code has not changed
// since 6.1 (TestOracleA32Unchanged), so its 6.1 policies serve every version.
var kernelVersions = []struct {
	major, minor int
	byMode       map[decode.Mode]*Policy
}{
	{6, 1, map[decode.Mode]*Policy{decode.Mode64: linux61, decode.Mode32: linux61, decode.ModeA64: linux61ARM64, decode.ModeA32: linux61ARM, decode.ModeT32: linux61Thumb}},
	{6, 12, map[decode.Mode]*Policy{decode.Mode64: linux612, decode.Mode32: linux612, decode.ModeA64: linux612ARM64, decode.ModeA32: linux61ARM, decode.ModeT32: linux61Thumb}},
	{7, 2, map[decode.Mode]*Policy{decode.Mode64: linux72, decode.Mode32: linux72, decode.ModeA64: linux72ARM64, decode.ModeA32: linux61ARM, decode.ModeT32: linux61Thumb}},
}

// ForKernel picks the kprobes policy for a kernel release ("6.12.117+deb13-amd64",
// "7.2.13", as uname -r or the version banner gives it) running code of mode m:
// the modelled version with the same major.minor, else the nearest older one
// (the oldest for a release older than all, and for an unreadable or empty
// release). note is one line saying which policy was chosen and why; nil
// policy when no policy models m.
func ForKernel(release string, m decode.Mode) (p *Policy, note string) {
	major, minor, ok := parseRelease(release)
	pick := -1
	for i, v := range kernelVersions {
		if ok && (v.major < major || (v.major == major && v.minor <= minor)) {
			pick = i
		}
	}
	exact := pick >= 0 && kernelVersions[pick].major == major && kernelVersions[pick].minor == minor
	if pick < 0 {
		pick = 0
	}
	p = kernelVersions[pick].byMode[m]
	if p == nil {
		return nil, ""
	}
	v := kernelVersions[pick]
	switch {
	case !ok:
		note = fmt.Sprintf("kernel version unknown: policy %s (the oldest modelled version; --policy chooses another)", p.Name)
	case exact:
		note = fmt.Sprintf("kernel %s: policy %s", release, p.Name)
	case major < kernelVersions[0].major || (major == kernelVersions[0].major && minor < kernelVersions[0].minor):
		note = fmt.Sprintf("kernel %s is older than every modelled version: policy %s used instead (--policy chooses another)", release, p.Name)
	default:
		note = fmt.Sprintf("kernel %s is not modelled: policy %s (the nearest older modelled version, %d.%d) used instead (--policy chooses another)", release, p.Name, v.major, v.minor)
	}
	return p, note
}

// parseRelease reads major.minor from the start of a kernel release.
func parseRelease(r string) (major, minor int, ok bool) {
	r = strings.TrimSpace(r)
	a, rest, found := strings.Cut(r, ".")
	if !found {
		return 0, 0, false
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(rest[:end])
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return x, y, true
}

// DefaultPolicy is the kprobes policy assumed for code of arch when none is
// named: the oldest modelled kernel's (linux-6.1, linux-6.1-arm64,
// linux-6.1-arm, linux-6.1-thumb), the one place that says so; nil when no
// policy models arch.
func DefaultPolicy(arch *decode.Arch) *Policy { return kernelVersions[0].byMode[arch.Mode] }
