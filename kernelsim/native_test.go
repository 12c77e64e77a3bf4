package kernelsim_test

// The x86 tests of the models (hit_test.go, the examples) run their cases on
// the CPU backend, which registers itself when imported.
import _ "github.com/kboost/kboost/kernelsim/native"
