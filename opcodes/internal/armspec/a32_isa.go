package armspec

// A32: 32-bit instruction words; T32: 32-bit words of two halfwords, and
// 16-bit T16 halfwords.
func init() {
	isas["a32"] = isa{ident: "ArmA32"}
	isas["t32"] = isa{ident: "ArmT32", t16: true}
}
