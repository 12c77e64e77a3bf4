package uprobe

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kboost/kboost/loader"
)

// Probe is one uprobe as the kernel takes it.
type Probe struct {
	Path         string // absolute path of the ELF file
	Offset       uint64 // file offset of the probed instruction
	Return       bool   // a uretprobe
	RefCtrOffset uint64 // file offset of a USDT semaphore (0: none)
	Pid          int    // perf only: the one process to probe; -1 every process
}

// ValidPath reports whether a path can be written to uprobe_events: absolute,
// printable, with none of the bytes its parser splits on (space, ':', '(',
// ')', '%', '\\' and so on).
func ValidPath(p string) bool {
	if !filepath.IsAbs(p) || len(p) > 4095 {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c <= ' ' || c > '~' || strings.IndexByte(":()%\\\"'`$;&|<>*?=,", c) >= 0 {
			return false
		}
	}
	return true
}

// Definition is the uprobe_events line of the probe in group/event
// ("p:kboost_u/ev /bin/x:0x1159(0x4010)"); every field is checked first.
func (p Probe) Definition(group, event string) (string, error) {
	if !ValidPath(p.Path) {
		return "", &loader.SpecError{Field: "path", Value: p.Path, Reason: "want an absolute path of printable characters without spaces, ':', '(', ')' or shell metacharacters"}
	}
	if !loader.ValidName(group) || !strings.HasPrefix(group, loader.GroupPrefix) {
		return "", &loader.SpecError{Field: "group", Value: group, Reason: "want a name starting with " + loader.GroupPrefix + " (letters, digits, '_')"}
	}
	if !loader.ValidName(event) {
		return "", &loader.SpecError{Field: "event", Value: event, Reason: "want letters, digits and '_' (at most 63, not starting with a digit)"}
	}
	kind := "p"
	if p.Return {
		kind = "r"
	}
	def := fmt.Sprintf("%s:%s/%s %s:%#x", kind, group, event, p.Path, p.Offset)
	if p.RefCtrOffset != 0 {
		def += fmt.Sprintf("(%#x)", p.RefCtrOffset)
	}
	return def, nil
}

// EventName is a default event name for a probe: the file's base name
// (reduced to letters, digits and '_') and the offset.
func (p Probe) EventName() string {
	var b strings.Builder
	for _, c := range filepath.Base(p.Path) {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	n := b.String()
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		n = "f_" + n
	}
	suf := fmt.Sprintf("_%x", p.Offset)
	if p.Return {
		suf += "_ret"
	}
	if len(n)+len(suf) > 63 {
		n = n[:63-len(suf)]
	}
	return n + suf
}

// Mapping is one line of /proc/PID/maps.
type Mapping struct {
	Start, End, Off uint64
	Perms, Name     string
}

// ParseMaps parses /proc/PID/maps.
func ParseMaps(b []byte) []Mapping {
	var out []Mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		o, err3 := strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		m := Mapping{Start: s, End: e, Off: o, Perms: f[1]}
		if len(f) >= 6 {
			m.Name = strings.Join(f[5:], " ")
		}
		out = append(out, m)
	}
	return out
}

// The mappings the kernel's uprobes add to a process.
const (
	MapXOL        = "[uprobes]"            // XOL slots (single-step), uretprobe trampoline
	MapTrampoline = "[uprobes-trampoline]" // optimized 5-byte NOP sites call into it
)

// Readback is what a probed process shows at a probe site.
type Readback struct {
	Addr       Hex    `json:"addr"` // the site's address in the process
	Site       Bytes  `json:"site"` // the bytes there now
	Int3       bool   `json:"int3"` // the breakpoint: int3 (x86), BRK #0x5 (arm64)
	Call       bool   `json:"call"` // e8 rel32 into [uprobes-trampoline] (7.2: after lea -0x80(%rsp),%rsp)
	CallTarget Hex    `json:"call_target,omitempty"`
	XOL        bool   `json:"xol"`        // [uprobes] is mapped
	Trampoline bool   `json:"trampoline"` // [uprobes-trampoline] is mapped
	Hits       uint64 `json:"hits"`
}

// Observed is the path a readback shows after at least one hit: the optimized
// call, else int3 with (single-step) or without (emulated) the XOL page.
func (r *Readback) Observed() string {
	switch {
	case r.Call:
		return PathOptimized.String()
	case r.Int3 && r.XOL:
		return PathSingleStep.String()
	case r.Int3:
		return PathEmulated.String()
	}
	return "none"
}

// siteAddr finds the address of file offset off of path in a process's maps.
func siteAddr(maps []Mapping, path string, off uint64) (uint64, bool) {
	for _, m := range maps {
		if m.Name == path && off >= m.Off && off-m.Off < m.End-m.Start {
			return m.Start + off - m.Off, true
		}
	}
	return 0, false
}

// fillReadback judges site bytes and maps.
func fillReadback(r *Readback, maps []Mapping, site, bp []byte) {
	r.Site = site
	var tramp []Mapping
	for _, m := range maps {
		switch m.Name {
		case MapXOL:
			r.XOL = true
		case MapTrampoline:
			r.Trampoline = true
			tramp = append(tramp, m)
		}
	}
	if bytes.HasPrefix(site, bp) {
		r.Int3 = true
	}
	// 7.2's 10-byte form moves %rsp below the red zone first.
	at := 0
	if bytes.HasPrefix(site, redZoneSkip) {
		at = len(redZoneSkip)
	}
	if len(site) >= at+5 && site[at] == 0xE8 {
		c := site[at:]
		rel := int32(uint32(c[1]) | uint32(c[2])<<8 | uint32(c[3])<<16 | uint32(c[4])<<24)
		t := uint64(r.Addr) + uint64(at) + 5 + uint64(int64(rel))
		for _, m := range tramp {
			if t >= m.Start && t < m.End {
				r.Call, r.CallTarget = true, Hex(t)
			}
		}
	}
}

// swbp is the breakpoint a uprobe writes, by ELF machine: int3 (x86),
// BRK #0x5 (arm64 UPROBE_SWBP_INSN).
var swbp = map[elf.Machine][]byte{
	elf.EM_X86_64:  {0xcc},
	elf.EM_386:     {0xcc},
	elf.EM_AARCH64: {0xa0, 0x00, 0x20, 0xd4},
}

// swbpOf is the breakpoint of the ELF file at path (int3 when unknown).
func swbpOf(path string) []byte {
	h := make([]byte, 20)
	if f, err := os.Open(path); err == nil {
		f.ReadAt(h, 0)
		f.Close()
	}
	if bp, ok := swbp[elf.Machine(binary.LittleEndian.Uint16(h[18:]))]; ok {
		return bp
	}
	return swbp[elf.EM_X86_64]
}

// redZoneSkip is lea -0x80(%rsp),%rsp, which 7.2's optimized 10-byte NOP
// runs before its call into [uprobes-trampoline].
var redZoneSkip = []byte{0x48, 0x8d, 0x64, 0x24, 0x80}
