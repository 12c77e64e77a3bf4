package cli

import (
	"errors"
	"os"
	"strings"

	"github.com/kboost/kboost/decode"
	"github.com/spf13/pflag"
)

// wordsUsage is the help of --words, the same in every command taking HEX.
const wordsUsage = "HEX is A64/A32 words (8 digits) or Thumb halfwords (4 digits) as objdump prints them, not bytes in memory order (a 0x-prefixed token is always a word)"

// policyUsage is the help of --policy, the same in every command.
const policyUsage = "kernel policy (see 'kboost policies'); default: the arch's (linux-6.1, linux-6.1-arm64, linux-6.1-arm, linux-6.1-thumb)"

// addWordsFlag defines --words on f.
func addWordsFlag(f *pflag.FlagSet, p *bool) { f.BoolVar(p, "words", false, wordsUsage) }

// hexArgs reads HEX arguments by the one input rule (decode.Arch.ParseHex).
// fileOK says the command also takes a FILE there: an argument that is no
// hex is then reported as the file it was meant to be (missing, a
// directory), not as bad hex.
func hexArgs(arch *decode.Arch, args []string, words, fileOK bool) ([]byte, error) {
	b, err := arch.ParseHex(args, words)
	if err == nil {
		return b, nil
	}
	if len(args) == 1 && !strings.ContainsAny(args[0], " \t,") {
		st, serr := os.Stat(args[0])
		switch {
		case serr == nil && st.IsDir():
			return nil, usagef("%s is a directory: give a file or hex bytes", args[0])
		case serr == nil && !fileOK:
			return nil, usagef("%s: this command takes hex bytes, not a file (%v)", args[0], err)
		case fileOK && errors.Is(serr, os.ErrNotExist) && strings.Contains(args[0], "/"):
			return nil, usagef("%s: no such file", args[0])
		case fileOK && errors.Is(serr, os.ErrNotExist):
			return nil, usagef("%s: no such file, and not hex bytes either (%v)", args[0], err)
		case fileOK && serr != nil:
			return nil, usagef("%s: %v", args[0], serr)
		}
	}
	return nil, usagef("%v", err)
}

// inputErr is the usage error (exit 2) of a decode error that means the
// HEX given was not one whole instruction: truncated, or with bytes after
// it. Other decode errors are not input mistakes (an invalid encoding has a
// verdict: the kernel refuses it): nil.
func inputErr(arch *decode.Arch, derr error) error {
	if errors.Is(derr, decode.ErrTruncated) || errors.Is(derr, decode.ErrTrailing) {
		return &inputError{arch: arch.Name, err: derr}
	}
	return nil
}

// inputError is HEX that is not the instruction(s) a command wants: a
// usage mistake (exit status 2) that still wraps the decoder's error
// (errors.Is(err, decode.ErrTruncated)).
type inputError struct {
	arch string
	err  error
}

func (e *inputError) Error() string { return e.arch + ": " + e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

// ExitCode is ExitUsage.
func (e *inputError) ExitCode() int { return ExitUsage }

// inputFile checks a file the user named (what names it: "--symbols", or ""
// for an argument) before a command reads it: missing or a directory is a
// usage mistake (exit status 2) saying so, not an open or read error.
func inputFile(what, path string) error {
	if what != "" {
		what += " "
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return usagef("%s%s: no such file", what, path)
	case err == nil && st.IsDir():
		return usagef("%s%s is a directory: give a file", what, path)
	}
	return nil
}
