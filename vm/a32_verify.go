package vm

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// ARMVerifyConfig is one 32-bit ARM verification run: a Debian armmp kernel
// package (an ARM-mode kernel) and the functions to probe.
type ARMVerifyConfig struct {
	Deb  string // linux-image-*-armmp .deb (kimage.FetchDebianKernel)
	Args guest.ARM64VerifyArgs
	// VM settings (Arch, Kernel filled in).
	VM Config
	// NoCache boots even when the kernel's record is cached.
	NoCache bool
}

// ARMVerification is the outcome of VerifyARM.
type ARMVerification struct {
	Report guest.ARM64Report
	Tables *guest.ARM64Tables // from the Image; nil when not found
	Timing Timing
	Cached string // the cache file the report came from, "" when booted
}

// VerifyARM boots the armhf kernel of vc.Deb (its zImage, as it is) under
// qemu-system-arm with the kboost-verify-arm step and returns what the kernel
// did with every probe and kboost's predictions under Args.Policy ("":
// linux-6.1-arm). Debian's armmp kernel has no /proc/kcore: the functions'
// bytes come from the zImage's decompressed Image (placed by its mcount
// calls and checked with the ftrace call sites, see FillARMImage), and the
// host reads the kprobe slot pages after each round through QEMU's monitor
// (Config.HostMemory) while the guest waits. The record is cached as
// VerifyARM64's.
func VerifyARM(ctx context.Context, vc ARMVerifyConfig) (*ARMVerification, error) {
	cfg := vc.VM
	cfg.Arch = ARM
	// No /proc/kcore: the host reads the slot pages for the guest.
	cfg.HostMemory = true
	dk, err := kimage.ReadDeb(vc.Deb)
	if err != nil {
		return nil, err
	}
	if !kimage.IsARMZImage(dk.Vmlinuz) {
		return nil, fmt.Errorf("vm: %s holds no ARM zImage (want a linux-image-*-armmp package)", filepath.Base(vc.Deb))
	}
	img, err := kimage.ExtractARMZImage(dk.Vmlinuz)
	if err != nil {
		return nil, fmt.Errorf("vm: %s: %w", filepath.Base(vc.Deb), err)
	}
	kcfg, err := kimage.ParseKConfig(dk.Config)
	if err != nil {
		return nil, fmt.Errorf("vm: config of %s: %w", filepath.Base(vc.Deb), err)
	}
	v := &ARMVerification{}
	cached, err := cachedRecord(vc.Deb, ARM, cfg, guest.ARMRecordVersion, vc.Args, vc.NoCache, &v.Report, func(raw json.RawMessage) error {
		return v.boot(ctx, cfg, dk, raw)
	})
	if err != nil {
		return nil, err
	}
	v.Cached = cached
	tables, err := FillARMImage(img, 0, &v.Report)
	if err != nil {
		return nil, err
	}
	v.Tables = tables
	// The slots the host read for the guest, matched now that the records
	// have their instruction bytes.
	if err := guest.MatchRecordedSlots(&v.Report, guest.ARMProbes); err != nil {
		return nil, fmt.Errorf("vm: %s: %w", filepath.Base(vc.Deb), err)
	}
	guest.PredictFixedReport(&v.Report, guest.ARMProbes, vc.Args.Policy, kcfg, tables)
	return v, nil
}

func (v *ARMVerification) boot(ctx context.Context, cfg Config, dk *kimage.DebKernel, args json.RawMessage) error {
	return bootFixed(ctx, cfg, dk, args, "zImage", guest.ARMVerifyStep, guest.ARMVerifyFile, &v.Report, &v.Timing, nil, nil)
}

// ARMImageBase is kimage.ARMImageBase (kept for vm's callers).
func ARMImageBase(img []byte, mcount uint64) (uint64, error) { return kimage.ARMImageBase(img, mcount) }

// FillARMImage fills the functions' and boundary records' bytes of an ARM
// record from the kernel Image loaded at textBase (0: ARMImageBase; the
// report's _text when recorded) where the record has none (bytes the guest
// read from the running kernel are kept, and the words the kernel patched
// at boot counted in a note), and returns the tables the Image gives: the ftrace locations
// (each bl __gnu_mcount_nc inside a recorded function) and the jump-label
// sites (FindARMJumpLabels; nil when not found). The Image must map onto the
// running kernel: every traced function (available_filter_functions) must
// hold exactly one such call and every untraced one none, for 95% of the
// functions, else the error says the Image does not match.
func FillARMImage(img []byte, textBase uint64, rep *guest.ARM64Report) (*guest.ARM64Tables, error) {
	mcount, ok := rep.Symbols["__gnu_mcount_nc"]
	if !ok {
		return nil, fmt.Errorf("vm: the record has no __gnu_mcount_nc address (recorded by an older guest?)")
	}
	if a, ok := rep.Symbols["_text"]; ok {
		textBase = a
	} else if textBase == 0 {
		b, err := ARMImageBase(img, mcount)
		if err != nil {
			return nil, err
		}
		textBase = b
	}
	tables := &guest.ARM64Tables{Ftrace: []uint64{}}
	good, bad := 0, 0
	words, patched := 0, 0
	var badNames []string
	for i := range rep.Funcs {
		f := &rep.Funcs[i]
		if f.Addr < textBase || f.Addr-textBase+f.Size > uint64(len(img)) {
			return nil, fmt.Errorf("vm: %s at %#x (+%d) is outside the Image at %#x (%d bytes)", f.Name, f.Addr, f.Size, textBase, len(img))
		}
		code := img[f.Addr-textBase : f.Addr-textBase+f.Size]
		if uint64(len(f.Bytes)) == 2*f.Size {
			// The running kernel's bytes, recorded: count the words the
			// kernel patched at boot (ftrace sites, phys-to-virt stubs).
			if run, err := hex.DecodeString(f.Bytes); err == nil {
				for off := 0; off+4 <= len(run); off += 4 {
					words++
					if !bytes.Equal(run[off:off+4], code[off:off+4]) {
						patched++
					}
				}
			}
		} else {
			f.Bytes = hex.EncodeToString(code)
		}
		sites := kimage.ARMMcountCalls(code, f.Addr, mcount)
		calls := len(sites)
		tables.Ftrace = append(tables.Ftrace, sites...)
		if (f.Traced && calls == 1) || (!f.Traced && calls == 0) {
			good++
		} else {
			bad++
			if len(badNames) < 8 {
				badNames = append(badNames, fmt.Sprintf("%s(traced=%v,calls=%d)", f.Name, f.Traced, calls))
			}
		}
	}
	if good == 0 || bad*20 > good+bad {
		return nil, fmt.Errorf("vm: the Image at %#x does not map onto the running kernel: %d of %d functions disagree with available_filter_functions on their mcount call, e.g. %s",
			textBase, bad, good+bad, strings.Join(badNames, " "))
	}
	if bad > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("image: %d of %d functions disagree with available_filter_functions on their mcount call: %s", bad, good+bad, strings.Join(badNames, " ")))
	}
	if words > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("image: the running kernel's bytes (recorded) differ from the Image's in %d of %d words (patched at boot: ftrace call sites, phys-to-virt stubs)", patched, words))
	}
	byFunc := map[string]string{}
	for _, f := range rep.Funcs {
		byFunc[f.Name] = f.Bytes
	}
	for i := range rep.Records {
		r := &rep.Records[i]
		if !r.Boundary || r.Bytes != "" {
			continue
		}
		if b := byFunc[r.Func]; uint64(len(b)) >= 2*(r.Off+4) {
			r.Bytes = b[2*r.Off : 2*(r.Off+4)]
		}
	}
	sort.Slice(tables.Ftrace, func(i, j int) bool { return tables.Ftrace[i] < tables.Ftrace[j] })
	if jl, err := FindARMJumpLabels(img, textBase, rep); err == nil {
		tables.JumpLabels = jl
	} else {
		rep.Notes = append(rep.Notes, err.Error())
	}
	return tables, nil
}

// FindARMJumpLabels is kimage.FindARMJumpLabels over the record's core
// and init text.
func FindARMJumpLabels(img []byte, textBase uint64, rep *guest.ARM64Report) ([]uint64, error) {
	jl, err := kimage.FindARMJumpLabels(img, textBase, [][2]uint64{{rep.TextStart, rep.TextEnd}, {rep.InitStart, rep.InitEnd}})
	if err != nil {
		return nil, fmt.Errorf("vm: %w", err)
	}
	return jl, nil
}

// ARMMnemonic names an A32 word for tables: kboost's decoder's mnemonic
// (as GNU objdump spells it), else "?" and the top byte.
func ARMMnemonic(w uint32) string {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], w)
	in, err := decode.Decode(b[:], decode.ModeA32, 0)
	if err != nil {
		return fmt.Sprintf("?%02x", w>>24)
	}
	return decode.ARMMnemonic(&in, 0, false)
}

var armView = &recordView{
	arch:    decode.ARM,
	fields:  guest.ARMFields,
	compare: guest.CompareARM,
	mnemonic: func(h string) (string, bool) {
		w, ok := guest.A64Word(h)
		if !ok {
			return "", false
		}
		return ARMMnemonic(w), true
	},
}

// armViewOf is armView for a record: slots compared on both sides when the
// slot pages were read, else only where the kernel's slot is known.
func armViewOf(rep *guest.ARM64Report) *recordView {
	if rep.SlotsRead {
		return armView
	}
	v := *armView
	v.compare = guest.CompareARMNoSlots
	return &v
}

// Compare is the comparison that applies to v's records (guest.CompareARM,
// or guest.CompareARMNoSlots for a record made without reading slots).
func (v *ARMVerification) Compare(r *guest.VerifyRecord) map[string]bool {
	return armViewOf(&v.Report).compare(r)
}

// Summarize counts v's records.
func (v *ARMVerification) Summarize() ARM64Summary {
	return summarizeFixed(&v.Report, armViewOf(&v.Report))
}

// WriteTable prints the kernel's outcome table per mnemonic and, with
// predictions, the agreement table (errno, addr, ftrace, optimized, slot) and
// every disagreement.
func (v *ARMVerification) WriteTable(w io.Writer) error {
	return writeFixedTable(w, &v.Report, v.Timing, v.Cached, armViewOf(&v.Report))
}

// FormatARMRecord is one line describing a probe.
func FormatARMRecord(r *guest.VerifyRecord) string { return formatFixedRecord(r, armView) }

// ARMVerifier runs VerifyARM: Debian linux-image-armmp.
var ARMVerifier = &Verifier{Arch: ARM, DebianMeta: "linux-image-armmp", DefaultPolicy: guest.ARMProbes.DefaultPolicy,
	Fields: guest.ARMFields, Cached: true, NonBoundary: "misaligned offsets", run: verifyARM}

func verifyARM(ctx context.Context, v *Verifier, req VerifyRequest) (*VerifyOutcome, error) {
	r, err := VerifyARM(ctx, ARMVerifyConfig{Deb: req.Deb, Args: fixedArgs(req), VM: req.VM, NoCache: req.NoCache})
	if err != nil {
		return nil, err
	}
	return fixedOutcome(v, &r.Report, armViewOf(&r.Report), r.Cached, r.WriteTable), nil
}
