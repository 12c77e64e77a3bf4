//go:build arm64

package monitor

import "github.com/kboost/kboost/sysent"

// tracees: an arm64 tracer's tracees are arm64 or compat ARM tasks.
var tracees = []*sysent.Table{sysent.TableARM64, sysent.TableARM}
