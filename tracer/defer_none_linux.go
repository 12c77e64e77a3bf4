//go:build linux && (386 || arm64 || arm)

package tracer

// deferSpecs is empty where kboost runs on i386, arm64 or ARM: those
// system call instructions clobber no register a return stub could use.
var deferSpecs = map[uint32]*deferSpec{}
