package cli

import (
	"debug/elf"
	"fmt"

	"github.com/kboost/kboost/audit"
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kimage"
)

// An EM_ARM file holds ARM and Thumb functions side by side (kimage's
// spans); a policy models one instruction set. Without --policy, audit
// takes the policy of the set most selected functions are in; the
// functions of another set are left out with a note saying which policy
// audits them.

// mixedArch reports whether f's code may change instruction set (an EM_ARM
// ELF file).
func mixedArch(f *kimage.File) bool {
	for _, s := range f.Sections {
		if s.Spans != nil {
			return true
		}
	}
	return false
}

// spanPolicy picks the policy for the functions sel selects in a mixed
// file: the kernel-version policy of the instruction set most of them are
// in. ok is false when f is not mixed or nothing is selected.
func spanPolicy(f *kimage.File, sel []string) (pol *boost.Policy, note string, ok bool) {
	if !mixedArch(f) {
		return nil, "", false
	}
	reqs, err := audit.Select(f, sel)
	if err != nil || len(reqs) == 0 {
		return nil, "", false
	}
	count := map[*decode.Arch]int{}
	var best *decode.Arch
	for _, r := range reqs {
		a := f.ArchAt(r.Sym.Addr)
		if a == nil {
			continue
		}
		if count[a]++; best == nil || count[a] > count[best] {
			best = a
		}
	}
	if best == nil {
		return nil, "", false
	}
	pol, note = boost.ForKernel(f.KernelVersion, best.Mode)
	if pol == nil {
		return nil, "", false
	}
	note = fmt.Sprintf("%s (%d of %d functions are %s code)", note, count[best], len(reqs), best.Name)
	if userBinary(f) {
		note += "; kboost has no uprobes policy for 32-bit ARM user space: these are the kernel's kprobes rules, not uprobes'"
	}
	return pol, note, true
}

// userBinary reports whether f is a user-space program or library (not a
// kernel, module or object).
func userBinary(f *kimage.File) bool {
	return f.Kind == kimage.KindELF && f.KernelVersion == "" && (f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN)
}

// keepPolicyArch drops the requests of a mixed file whose function is in an
// instruction set pol does not model, and says how many and which policy
// audits them.
func keepPolicyArch(f *kimage.File, pol *boost.Policy, reqs []audit.Request) ([]audit.Request, string) {
	if !mixedArch(f) {
		return reqs, ""
	}
	kept := reqs[:0:0]
	left := map[*decode.Arch]int{}
	for _, r := range reqs {
		a := f.ArchAt(r.Sym.Addr)
		if a != nil && !pol.Supports(a.Mode) {
			left[a]++
			continue
		}
		kept = append(kept, r)
	}
	note := ""
	for a, n := range left {
		other, _ := boost.ForKernel(f.KernelVersion, a.Mode)
		name := "no policy"
		if other != nil {
			name = "--policy " + other.Name
		}
		if note != "" {
			note += "; "
		}
		note += fmt.Sprintf("%d %s functions not audited: policy %s models %s code only (%s audits them)", n, a.Name, pol.Name, modelsName(pol), name)
	}
	return kept, note
}

// modelsName names the instruction sets pol models as the CLI spells them.
func modelsName(pol *boost.Policy) string {
	name := ""
	for _, a := range decode.Arches {
		if pol.Supports(a.Mode) {
			if name != "" {
				name += " and "
			}
			name += a.Name
		}
	}
	return name
}
