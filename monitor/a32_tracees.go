//go:build arm

package monitor

import "github.com/kboost/kboost/sysent"

// tracees: an ARM tracer's tracees are ARM tasks.
var tracees = []*sysent.Table{sysent.TableARM}
