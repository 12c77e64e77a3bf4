package armspec

// A64: 32-bit instruction words.
func init() { isas["a64"] = isa{ident: "ArmA64"} }
