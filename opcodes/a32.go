package opcodes

// The 32-bit ARM encoding tables: A32 (ARM state) from spec/arm.spec and T32
// (Thumb state, T16 and T32 encodings) from spec/thumb.spec, in the format of
// spec/arm64.spec. See ArmTable for the lookup and decode.ARM / decode.Thumb
// for the decoders built on them.

//go:generate go run ./gen -format arm -spec spec/arm.spec -o a32_tables.go
//go:generate go run ./gen -format arm -spec spec/thumb.spec -o a32_t32_tables.go
