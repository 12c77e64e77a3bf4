package native

import "github.com/kboost/kboost/kernelsim"

func init() {
	for a := range targets {
		kernelsim.RegisterBackend(a, func(a *kernelsim.Arch, o kernelsim.Options) (kernelsim.EmulatedBackend, error) {
			s, err := NewWithOptions(a, o)
			if err != nil {
				return nil, err // not a nil *Sandbox in the interface
			}
			return s, nil
		})
	}
}
