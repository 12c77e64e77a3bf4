package cli

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/recordio"
	"github.com/kboost/kboost/kimage"
	"github.com/spf13/cobra"
)

func newDecodeCmd(s Streams) *cobra.Command {
	var (
		archName string
		addrStr  string
		jsonOut  bool
		symsPath string
		words    bool
	)
	cmd := &cobra.Command{
		Use:   "decode HEX...|FILE",
		Short: "Decode instructions from hex bytes or every executable section of a file",
		Long: `Decode x86 instructions exactly (length, prefixes, ModRM/SIB, displacement,
immediate, RIP-relative, branch target) and print them in AT&T syntax; with
--arch arm64, decode A64 words (class, branch target, PC-relative address) and
print them as GNU objdump does.

With HEX arguments ("48 8b 05 10 00 00 00" or "488b0510000000": bytes in memory
order; with --words, or as 0x-prefixed tokens, A64/A32 words and Thumb halfwords
as objdump prints them) the bytes are decoded one instruction after another from
--addr; input that ends inside an instruction is an error (exit status 2). With a FILE (ELF, Debian kernel
.deb or vmlinuz) every executable section is decoded like 'objdump -d': a linear
sweep that restarts at each symbol.`,
		Example: `  kboost decode 48 8b 05 10 00 00 00
  kboost decode --arch i386 66 e8 00 00
  kboost decode --arch arm64 3f 23 03 d5 fd 7b bf a9
  kboost decode --arch arm64 --words d503233f a9bf7bfd
  kboost decode --json /usr/bin/true | head`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			arch, err := decode.LookupArch(archName)
			if err != nil {
				return &UsageError{err.Error()}
			}
			w := recordio.NewWriter(s.Out, 1<<16)
			defer w.Flush()
			if len(args) == 1 && fileExists(args[0]) {
				f, err := openImage(args[0], symsPath)
				if err != nil {
					return err
				}
				defer f.Close()
				if cmd.Flags().Changed("arch") && f.Arch != arch {
					return usagef("--arch %s, but %s holds %s code (leave out --arch for a file)", arch.Name, args[0], f.Arch.Name)
				}
				if err := decodeFile(w, f, jsonOut, s.Err); err != nil {
					return err
				}
				return w.Flush()
			}
			code, err := hexArgs(arch, args, words, true)
			if err != nil {
				return err
			}
			addr, err := parseAddr(addrStr)
			if err != nil {
				return err
			}
			fm := decode.NewFormatter(0)
			lw := lineWriter{arch: arch.Name}
			var last error
			decode.Sweep(arch.Mode, code, addr, nil, func(inst *decode.Inst, derr error) bool {
				lw.inst(w, inst, derr, fm, jsonOut, "")
				last = derr
				return true
			})
			if err := w.Flush(); err != nil {
				return err
			}
			// the bytes ran out inside the last instruction: not what the user meant
			return inputErr(arch, last)
		},
	}
	cmd.Flags().StringVar(&archName, "arch", "x86-64", "instruction set for HEX input: x86-64, i386, arm64, arm or thumb")
	addWordsFlag(cmd.Flags(), &words)
	cmd.Flags().StringVar(&addrStr, "addr", "0", "address of the first HEX byte")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "one JSON object per instruction: addr, len, bytes, asm (and error)")
	cmd.Flags().StringVar(&symsPath, "symbols", "", "System.map or /proc/kallsyms-format file for a stripped FILE")
	return cmd
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func parseAddr(s string) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"), 16, 64)
	if err != nil {
		return 0, usagef("bad address %q: want hex, e.g. 0xffffffff81000000", s)
	}
	return v, nil
}

// archAddr is an address flag's value: the one given, else def (the
// --arch's default, which is why the flag's own default is empty).
func archAddr(cmd *cobra.Command, flag, s string, def uint64) (uint64, error) {
	if !cmd.Flags().Changed(flag) {
		return def, nil
	}
	return parseAddr(s)
}

// archAddrs lists an address default of every arch, for a flag's help.
func archAddrs(get func(*decode.Arch) uint64) string {
	var b []string
	for _, a := range decode.Arches {
		b = append(b, fmt.Sprintf("%s %#x", a.Name, get(a)))
	}
	return strings.Join(b, ", ")
}

// openImage opens FILE with kimage and attaches --symbols when given.
func openImage(path, symsPath string) (*kimage.File, error) {
	// the caller's mistakes, named before kimage reads anything
	if err := inputFile("", path); err != nil {
		return nil, err
	}
	if symsPath != "" {
		if err := inputFile("--symbols", symsPath); err != nil {
			return nil, err
		}
	}
	// The symbol map (kallsyms: ~4 MB of text) parses while the image is read.
	type symResult struct {
		st  *kimage.SymTab
		err error
	}
	syms := make(chan symResult, 1)
	if symsPath != "" {
		go func() {
			st, err := kimage.LoadSymbols(symsPath)
			syms <- symResult{st, err}
		}()
	}
	f, err := kimage.OpenMapped(path)
	if err != nil {
		if strings.Contains(err.Error(), path) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Arch == nil {
		f.Close()
		return nil, fmt.Errorf("%s: machine %s is not supported yet (x86-64, i386, arm64 and 32-bit ARM are)", path, f.Machine)
	}
	if symsPath != "" {
		r := <-syms
		if r.err != nil {
			f.Close()
			return nil, fmt.Errorf("--symbols %s: %w", symsPath, r.err)
		}
		// A kallsyms copy from a KASLR boot is shifted back to link addresses.
		f.SetSymbols(r.st)
	}
	return f, nil
}

// chunk is a run of instruction starts formatted by one worker.
type chunk struct {
	data  []byte // section contents
	base  uint64 // address of data[0]
	offs  []sweptInst
	out   []byte
	ready chan struct{}
}

// decodeFile decodes every executable section: one goroutine sweeps (fast) and
// cuts the instruction stream into chunks, workers format them, and the chunks
// are written in order.
func decodeFile(w io.Writer, f *kimage.File, jsonOut bool, errw io.Writer) error {
	secs := f.ExecSections()
	if len(secs) == 0 {
		return fmt.Errorf("%s: no executable sections to decode", f.Path)
	}
	workers := runtime.GOMAXPROCS(0)
	todo := make(chan *chunk, workers*2)
	order := make(chan *chunk, workers*4)
	for k := 0; k < workers; k++ {
		go func() {
			fm := decode.NewFormatter(0)
			var inst decode.Inst
			lw := lineWriter{arch: f.Arch.Name}
			for c := range todo {
				buf := make([]byte, 0, len(c.offs)*128)
				for _, si := range c.offs {
					var derr error
					if si.arch == nil {
						inst = decode.Inst{Addr: c.base + uint64(si.off), Len: int(si.n)}
						copy(inst.Raw[:], c.data[si.off:uint64(si.off)+uint64(si.n)])
						derr = decode.ErrData
					} else {
						derr = si.arch.Decode(&inst, c.data[si.off:], c.base+uint64(si.off))
					}
					if si.inIT && derr == nil {
						buf = lw.appendText(buf, &inst, decode.ARMFormatIT(&inst, si.itCond, true, nil), nil, jsonOut)
						continue
					}
					buf = lw.appendInst(buf, &inst, derr, fm, jsonOut)
				}
				c.out = buf
				close(c.ready)
			}
		}()
	}
	var werr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range order {
			<-c.ready
			if werr == nil {
				_, werr = w.Write(c.out)
			}
			c.out = nil
		}
	}()
	prog := newProgress(errw, "decode")
	var total uint64
	for _, sec := range secs {
		total += sec.Size
	}
	var doneBytes uint64
	var ferr error
	for _, sec := range secs {
		data, err := sec.Data()
		if err != nil {
			ferr = err
			break
		}
		if !jsonOut {
			hdr := fmt.Sprintf("\nDisassembly of section %s:\n", sec.Name)
			c := &chunk{out: []byte(hdr), ready: make(chan struct{})}
			close(c.ready)
			order <- c
		}
		starts := f.SymbolStarts(sec)
		const chunkLen = 1 << 15
		cur := &chunk{data: data, base: sec.Addr, offs: make([]sweptInst, 0, chunkLen), ready: make(chan struct{})}
		flush := func() {
			if len(cur.offs) == 0 {
				return
			}
			order <- cur
			todo <- cur
			cur = &chunk{data: data, base: sec.Addr, offs: make([]sweptInst, 0, chunkLen), ready: make(chan struct{})}
		}
		spans := f.CodeSpans(sec)
		// IT blocks are followed through consecutive Thumb instructions, as
		// objdump follows them.
		var it decode.ITState
		var next uint64
		sweepSection(f, sec, data, starts, spans, func(inst *decode.Inst, arch *decode.Arch, derr error) bool {
			si := sweptInst{off: uint32(inst.Addr - sec.Addr), arch: arch}
			if arch == nil {
				si.n = uint8(inst.Len)
			}
			if inst.Addr != next || derr != nil || arch == nil || !arch.ITBlocks {
				it.Reset()
			}
			if derr == nil && arch != nil && arch.ITBlocks {
				si.itCond, si.inIT = it.Next(inst)
			}
			next = inst.Addr + uint64(inst.Len)
			cur.offs = append(cur.offs, si)
			if len(cur.offs) == chunkLen {
				flush()
				prog.update(doneBytes+(inst.Addr-sec.Addr), total)
			}
			return true
		})
		flush()
		doneBytes += sec.Size
	}
	close(todo)
	close(order)
	<-done
	prog.finish()
	if ferr != nil {
		return ferr
	}
	if werr != nil && !errors.Is(werr, os.ErrClosed) {
		return fmt.Errorf("writing output: %w", werr)
	}
	return nil
}

// sweepSection sweeps a section of one instruction set as before ARM
// files (decode.Sweep: an instruction may run over a symbol start), and a
// section with spans (EM_ARM) with decode.SweepSpans, as objdump does.
func sweepSection(f *kimage.File, sec kimage.Section, data []byte, starts []uint64, spans []decode.Span, fn func(inst *decode.Inst, arch *decode.Arch, err error) bool) {
	if sec.Spans != nil {
		decode.SweepSpans(data, sec.Addr, starts, spans, fn)
		return
	}
	decode.Sweep(f.Arch.Mode, data, sec.Addr, starts, func(inst *decode.Inst, err error) bool { return fn(inst, f.Arch, err) })
}

// sweptInst is where the sweep found an instruction (arch) or data (n bytes);
// a Thumb instruction inside an IT block has the block's condition (inIT).
type sweptInst struct {
	off    uint32
	n      uint8
	inIT   bool
	itCond decode.Cond
	arch   *decode.Arch
}

// lineWriter renders one instruction as a text or JSON line.
type lineWriter struct {
	arch    string // the records' arch
	scratch []byte
}

func (lw *lineWriter) inst(w io.Writer, inst *decode.Inst, derr error, fm *decode.Formatter, jsonOut bool, _ string) {
	lw.scratch = lw.appendInst(lw.scratch[:0], inst, derr, fm, jsonOut)
	w.Write(lw.scratch)
}

const hexDigits = "0123456789abcdef"

// appendHex appends v in lower-case hex without leading zeros.
func appendHex(buf []byte, v uint64) []byte {
	var tmp [16]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = hexDigits[v&15]
		v >>= 4
		if v == 0 {
			break
		}
	}
	return append(buf, tmp[i:]...)
}

// appendJSONString appends s as a JSON string; disassembly is plain ASCII, so
// the common case copies it as is.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.AppendQuote(buf, s)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

func appendHexBytes(buf []byte, b []byte) []byte {
	for i, c := range b {
		if i > 0 {
			buf = append(buf, ' ')
		}
		buf = append(buf, hexDigits[c>>4], hexDigits[c&15])
	}
	return buf
}

func (lw *lineWriter) appendInst(buf []byte, inst *decode.Inst, derr error, fm *decode.Formatter, jsonOut bool) []byte {
	text := "(bad)"
	if derr == nil {
		text = fm.Format(inst)
	} else if errors.Is(derr, decode.ErrData) {
		text, derr = dataText(inst), nil
	}
	return lw.appendText(buf, inst, text, derr, jsonOut)
}

// appendText renders inst with its text (and error).
func (lw *lineWriter) appendText(buf []byte, inst *decode.Inst, text string, derr error, jsonOut bool) []byte {
	n := inst.Len
	if n == 0 {
		n = 1
	}
	raw := inst.Raw[:n]
	if jsonOut {
		buf = append(buf, `{"arch":"`...)
		buf = append(buf, lw.arch...)
		buf = append(buf, `","addr":"0x`...)
		buf = appendHex(buf, inst.Addr)
		buf = append(buf, `","len":`...)
		buf = strconv.AppendInt(buf, int64(inst.Len), 10)
		buf = append(buf, `,"bytes":"`...)
		buf = appendHexBytes(buf, raw)
		buf = append(buf, `","asm":`...)
		buf = appendJSONString(buf, text)
		if derr != nil {
			buf = append(buf, `,"error":`...)
			buf = strconv.AppendQuote(buf, derr.Error())
		}
		return append(buf, "}\n"...)
	}
	buf = strconv.AppendUint(buf, inst.Addr, 16)
	buf = append(buf, ":\t"...)
	buf = appendHexBytes(buf, raw)
	buf = append(buf, '\t')
	buf = append(buf, text...)
	if derr != nil {
		buf = append(buf, "\t# "...)
		buf = append(buf, derr.Error()...)
	}
	return append(buf, '\n')
}

// dataText prints data bytes of an ARM file's $d span as objdump does.
func dataText(inst *decode.Inst) string {
	b := inst.Raw[:inst.Len]
	switch len(b) {
	case 4:
		return fmt.Sprintf(".word\t0x%08x", binary.LittleEndian.Uint32(b))
	case 2:
		return fmt.Sprintf(".short\t0x%04x", binary.LittleEndian.Uint16(b))
	}
	return fmt.Sprintf(".byte\t0x%02x", b[0])
}
