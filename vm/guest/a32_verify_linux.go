//go:build linux

package guest

import "encoding/json"

func init() {
	Register(ARMVerifyStep, func(e *Env, raw json.RawMessage) error { return stepVerifyFixed(e, raw, ARMProbes) })
}
