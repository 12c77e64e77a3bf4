package objdump

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Machine names for raw bytes (objdump -m).
const (
	MachineI386   = "i386"
	MachineX86_64 = "i386:x86-64"
)

// Config selects how objdump is run.
type Config struct {
	// Objdump is the program to run; "" means "objdump" from $PATH.
	Objdump string
	// Machine is the -m value; required for raw bytes (RunBytes), optional for ELF.
	Machine string
	// Intel64 passes -M intel64: decode 64-bit code with Intel semantics
	// (66-prefixed near branches keep a 64-bit operand size and a rel32, as the
	// Linux kernel's decoder does) instead of binutils' default AMD semantics.
	// It should be set for 64-bit code and has no effect on 32-bit code.
	Intel64 bool
	// VMA is the address of the first byte for raw bytes (--adjust-vma).
	VMA uint64
	// Sections restricts disassembly to these sections (-j); empty means all
	// executable sections.
	Sections []string
	// Stderr receives objdump's diagnostics; nil collects them for the error.
	Stderr *bytes.Buffer
}

// ErrObjdump is wrapped by errors from running objdump itself.
var ErrObjdump = errors.New("objdump failed")

// Args returns objdump's arguments for file (raw selects -b binary).
func (c *Config) Args(file string, raw bool) []string {
	args := []string{"-w", "-z"}
	if raw {
		args = append(args, "-D", "-b", "binary", fmt.Sprintf("--adjust-vma=%#x", c.VMA))
	} else {
		args = append(args, "-d")
	}
	if c.Machine != "" {
		args = append(args, "-m", c.Machine)
	}
	if c.Intel64 {
		args = append(args, "-M", "intel64")
	}
	for _, s := range c.Sections {
		args = append(args, "-j", s)
	}
	return append(args, file)
}

// Run disassembles the object file at path and calls fn for every record, in
// output order. fn's record is only valid during the call. Run stops at the
// first error fn returns and returns it.
func Run(ctx context.Context, path string, cfg Config, fn func(*Record) error) error {
	return run(ctx, cfg.Args(path, false), cfg, fn)
}

// RunBytes disassembles raw bytes as machine cfg.Machine starting at address
// cfg.VMA (objdump -b binary), calling fn for every record.
func RunBytes(ctx context.Context, code []byte, cfg Config, fn func(*Record) error) error {
	if cfg.Machine == "" {
		return fmt.Errorf("objdump of raw bytes needs Config.Machine (%q or %q): %w",
			MachineI386, MachineX86_64, ErrObjdump)
	}
	f, err := os.CreateTemp("", "kboost-objdump-*.bin")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(code); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return run(ctx, cfg.Args(f.Name(), true), cfg, fn)
}

func run(ctx context.Context, args []string, cfg Config, fn func(*Record) error) error {
	return runCmd(ctx, args, cfg, func(out io.Reader) error {
		sc := NewScanner(out)
		for sc.Scan() {
			if err := fn(sc.Record()); err != nil {
				return err
			}
		}
		return sc.Err()
	})
}

// RunLines runs cfg.Objdump with args and calls fn with every output line
// (without its newline; valid only during the call), for output the Scanner
// does not parse, such as ARM's one-word column. An error from fn stops
// objdump and is returned.
func RunLines(ctx context.Context, cfg Config, args []string, fn func(line []byte) error) error {
	return runCmd(ctx, args, cfg, func(out io.Reader) error {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
		for sc.Scan() {
			if err := fn(bytes.TrimRight(sc.Bytes(), "\r")); err != nil {
				return err
			}
		}
		return sc.Err()
	})
}

// runCmd starts objdump and hands its output to consume; when consume fails,
// objdump is stopped (its exit status no longer matters) and the error
// returned.
func runCmd(ctx context.Context, args []string, cfg Config, consume func(io.Reader) error) error {
	prog := cfg.Objdump
	if prog == "" {
		prog = "objdump"
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = new(bytes.Buffer)
	}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %v (install GNU binutils: apt-get install binutils, or binutils-aarch64-linux-gnu / binutils-arm-linux-gnueabi for the ARM objdumps)", ErrObjdump, err)
	}
	if err := consume(out); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%w: %s %s: %v: %s", ErrObjdump, prog, strings.Join(args, " "),
			err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
