package guest

import (
	"encoding/json"
	"fmt"
)

// RegisterTyped registers a step whose arguments are a T: the scenario's
// JSON is decoded into one before f runs, and a decoding error is the step's.
func RegisterTyped[T any](name string, f func(e *Env, args T) error) {
	Register(name, func(e *Env, raw json.RawMessage) error {
		var args T
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("%s arguments: %w", name, err)
		}
		return f(e, args)
	})
}
