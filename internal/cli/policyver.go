package cli

import (
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
)

// pickFilePolicy is pickPolicy for a kernel file: without --policy the
// kernel's own version (vmlinux banner, bzImage header, .deb name) picks it
// (boost.ForKernel), and note says which and why ("" with --policy).
func pickFilePolicy(name string, f *kimage.File) (*boost.Policy, string, error) {
	if name == "" && f.Arch != nil {
		if p, note := boost.ForKernel(f.KernelVersion, f.Arch.Mode); p != nil {
			return p, note, nil
		}
	}
	p, err := pickPolicy(name, f.Arch)
	return p, "", err
}
