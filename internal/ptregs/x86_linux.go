//go:build linux && (amd64 || 386)

package ptregs

// hostLayouts are the register sets an x86 kernel answers with (an i386
// tracer sees only i386 tasks).
var hostLayouts = []*Layout{X86_64, I386}
