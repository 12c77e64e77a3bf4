package ptprobe

import "github.com/kboost/kboost/decode"

// The engine single-steps, relocates and emulates x86-64 code only.
func init() { probedArches = append(probedArches, decode.X86_64) }
