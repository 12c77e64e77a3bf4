// Package fuzz is the differential fuzz engine of `kboost fuzz`: generators
// of candidate instructions (structured and mutated x86 from kernel samples,
// class-directed A64, A32 and Thumb words), and one judge per instruction
// set over a kernelsim.Backend.
//
// # Contract
//
// A fuzzer takes blocks of BlockSize cases from its CaseSource (the same
// seed and block number give the same cases, so a campaign can be resumed
// or sharded), runs each in place and through the hit its policy decides
// on the backend, over Config.Trials random states, and counts what it
// found in Stats. A divergence counts only when it reproduces, the in-place
// run is deterministic and the memory operand lies in pages the sandbox
// controls; each is reported once per key as a Finding with a minimized
// Reproducer (`kboost sim` flags that replay it). The engine never starts a
// process itself except in Measure; the caller opens and closes the backend.
package fuzz
