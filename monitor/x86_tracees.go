//go:build amd64 || 386

package monitor

import "github.com/kboost/kboost/sysent"

// tracees are the system call tables of the modes an x86 tracer's tracees
// run in (the first: the native one).
var tracees = []*sysent.Table{sysent.TableX86_64, sysent.TableI386}
