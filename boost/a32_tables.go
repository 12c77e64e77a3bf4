package boost

// The decode tables of Linux 6.1's arch/arm/probes/ as data: every entry's
// kind, mask, value and REGS() register constraints, in the kernel's order
// (the walk in a32_policy.go depends on it: OR entries make the following entry
// match unconditionally, and masks assume earlier entries were tested). The
// tables were transcribed mechanically from the kernel source and are checked
// against the kernel's own code by TestOracleA32Bulk and the golden tables.
// Reject labels and end labels are kboost's names for the rule that rejects
// (see a32RejectDesc).

// a32TabARM_1111: the kernel's arm_1111_table[] (decode-arm.c).
var a32TabARM_1111 = &a32Table{name: "arm_1111_table", end: "unconditional", e: []a32Entry{
	{kind: dSimulate, mask: 0xfe300000, value: 0xf4100000, act: armPreloadImm},
	{kind: dSimulate, mask: 0xfe300010, value: 0xf6100000, act: armPreloadReg},
	{kind: dSimulate, mask: 0xfe000000, value: 0xfa000000, act: armBranchImm},
}}

// a32TabARM_0001_0xx0____0xxx: the kernel's arm_cccc_0001_0xx0____0xxx_table[] (decode-arm.c).
var a32TabARM_0001_0xx0____0xxx = &a32Table{name: "arm_cccc_0001_0xx0____0xxx_table", end: "misc", e: []a32Entry{
	{kind: dSimulate, mask: 0x0ff000f0, value: 0x01000000, act: armMrs, regs: rr(rNONE, rNOPC, rNONE, rNONE, rNONE)},
	{kind: dSimulate, mask: 0x0ff000f0, value: 0x01200010, act: armBranchReg},
	{kind: dSimulate, mask: 0x0ff000f0, value: 0x01200030, act: armBranchReg, regs: rr(rNONE, rNONE, rNONE, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0ff000f0, value: 0x01600010, act: armClz, regs: rr(rNONE, rNOPC, rNONE, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0f9000f0, value: 0x01000050, act: armSaturatingArithmetic, regs: rr(rNOPC, rNOPC, rNONE, rNONE, rNOPC)},
}}

// a32TabARM_0001_0xx0____1xx0: the kernel's arm_cccc_0001_0xx0____1xx0_table[] (decode-arm.c).
var a32TabARM_0001_0xx0____1xx0 = &a32Table{name: "arm_cccc_0001_0xx0____1xx0_table", end: "unallocated", e: []a32Entry{
	{kind: dEmulate, mask: 0x0ff00090, value: 0x01400080, act: armMul1, regs: rr(rNOPC, rNOPC, rNOPC, rNONE, rNOPC)},
	{kind: dOr, mask: 0x0ff000b0, value: 0x012000a0},
	{kind: dEmulate, mask: 0x0ff00090, value: 0x01600080, act: armMul2, regs: rr(rNOPC, rNONE, rNOPC, rNONE, rNOPC)},
	{kind: dOr, mask: 0x0ff00090, value: 0x01000080},
	{kind: dEmulate, mask: 0x0ff000b0, value: 0x01200080, act: armMul2, regs: rr(rNOPC, rNOPC, rNOPC, rNONE, rNOPC)},
}}

// a32TabARM_0000_____1001: the kernel's arm_cccc_0000_____1001_table[] (decode-arm.c).
var a32TabARM_0000_____1001 = &a32Table{name: "arm_cccc_0000_____1001_table", end: "unallocated", e: []a32Entry{
	{kind: dEmulate, mask: 0x0fe000f0, value: 0x00000090, act: armMul2, regs: rr(rNOPC, rNONE, rNOPC, rNONE, rNOPC)},
	{kind: dOr, mask: 0x0fe000f0, value: 0x00200090},
	{kind: dEmulate, mask: 0x0ff000f0, value: 0x00600090, act: armMul2, regs: rr(rNOPC, rNOPC, rNOPC, rNONE, rNOPC)},
	{kind: dOr, mask: 0x0ff000f0, value: 0x00400090},
	{kind: dEmulate, mask: 0x0f8000f0, value: 0x00800090, act: armMul1, regs: rr(rNOPC, rNOPC, rNOPC, rNONE, rNOPC)},
}}

// a32TabARM_0001_____1001: the kernel's arm_cccc_0001_____1001_table[] (decode-arm.c).
var a32TabARM_0001_____1001 = &a32Table{name: "arm_cccc_0001_____1001_table", end: "swp_exclusive", e: []a32Entry{}}

// a32TabARM_000x_____1xx1: the kernel's arm_cccc_000x_____1xx1_table[] (decode-arm.c).
var a32TabARM_000x_____1xx1 = &a32Table{name: "arm_cccc_000x_____1xx1_table", end: "unallocated", e: []a32Entry{
	{kind: dReject, mask: 0x0f200090, value: 0x00200090, label: "unprivileged_extra"},
	{kind: dReject, mask: 0x0e10e0d0, value: 0x0000e0d0, label: "ldrd_strd_lr"},
	{kind: dEmulate, mask: 0x0e5000d0, value: 0x000000d0, act: armLdrstrd, regs: rr(rNOPCWB, rNOPCX, rNONE, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0e5000d0, value: 0x004000d0, act: armLdrstrd, regs: rr(rNOPCWB, rNOPCX, rNONE, rNONE, rNONE)},
	{kind: dEmulate, mask: 0x0e5000f0, value: 0x000000b0, act: armStoreExtra, regs: rr(rNOPCWB, rNOPC, rNONE, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0e500090, value: 0x00100090, act: armLoadExtra, regs: rr(rNOPCWB, rNOPC, rNONE, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0e5000f0, value: 0x004000b0, act: armStoreExtra, regs: rr(rNOPCWB, rNOPC, rNONE, rNONE, rNONE)},
	{kind: dEmulate, mask: 0x0e500090, value: 0x00500090, act: armLoadExtra, regs: rr(rNOPCWB, rNOPC, rNONE, rNONE, rNONE)},
}}

// a32TabARM_000x: the kernel's arm_cccc_000x_table[] (decode-arm.c).
var a32TabARM_000x = &a32Table{name: "arm_cccc_000x_table", end: "unallocated", e: []a32Entry{
	{kind: dReject, mask: 0x0e10f000, value: 0x0010f000, label: "dp_flags_pc"},
	{kind: dSimulate, mask: 0xffffffff, value: 0xe1a0c00d, act: armMovIpSp},
	{kind: dEmulate, mask: 0x0f900010, value: 0x01100000, act: armDataProcessingReg, regs: rr(rANY, rNONE, rNONE, rNONE, rANY)},
	{kind: dEmulate, mask: 0x0fa00010, value: 0x01a00000, act: armDataProcessingReg, regs: rr(rNONE, rANY, rNONE, rNONE, rANY)},
	{kind: dEmulate, mask: 0x0e000010, value: 0x00000000, act: armDataProcessingReg, regs: rr(rANY, rANY, rNONE, rNONE, rANY)},
	{kind: dEmulate, mask: 0x0f900090, value: 0x01100010, act: armDataProcessingReg, regs: rr(rNOPC, rNONE, rNOPC, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0fa00090, value: 0x01a00010, act: armDataProcessingReg, regs: rr(rNONE, rNOPC, rNOPC, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0e000090, value: 0x00000010, act: armDataProcessingReg, regs: rr(rNOPC, rNOPC, rNOPC, rNONE, rNOPC)},
}}

// a32TabARM_001x: the kernel's arm_cccc_001x_table[] (decode-arm.c).
var a32TabARM_001x = &a32Table{name: "arm_cccc_001x_table", end: "unallocated", e: []a32Entry{
	{kind: dEmulate, mask: 0x0fb00000, value: 0x03000000, act: armMovHalfword, regs: rr(rNONE, rNOPC, rNONE, rNONE, rNONE)},
	{kind: dOr, mask: 0x0fff00ff, value: 0x03200001},
	{kind: dEmulate, mask: 0x0fff00ff, value: 0x03200004, act: armSev},
	{kind: dSimulate, mask: 0x0fff00fc, value: 0x03200000, act: armWfe},
	{kind: dReject, mask: 0x0fb00000, value: 0x03200000, label: "hint_msr_imm"},
	{kind: dReject, mask: 0x0e10f000, value: 0x0210f000, label: "dp_flags_pc"},
	{kind: dEmulate, mask: 0x0f900000, value: 0x03100000, act: armDataProcessingImm, regs: rr(rANY, rNONE, rNONE, rNONE, rNONE)},
	{kind: dEmulate, mask: 0x0fa00000, value: 0x03a00000, act: armDataProcessingImm, regs: rr(rNONE, rANY, rNONE, rNONE, rNONE)},
	{kind: dEmulate, mask: 0x0e000000, value: 0x02000000, act: armDataProcessingImm, regs: rr(rANY, rANY, rNONE, rNONE, rNONE)},
}}

// a32TabARM_0110_____xxx1: the kernel's arm_cccc_0110_____xxx1_table[] (decode-arm.c).
var a32TabARM_0110_____xxx1 = &a32Table{name: "arm_cccc_0110_____xxx1_table", end: "media_unallocated", e: []a32Entry{
	{kind: dEmulate, mask: 0x0ff000f0, value: 0x068000b0, act: armSaturate, regs: rr(rNOPC, rNOPC, rNONE, rNONE, rNOPC)},
	{kind: dOr, mask: 0x0fa00030, value: 0x06a00010},
	{kind: dEmulate, mask: 0x0fb000f0, value: 0x06a00030, act: armSaturate, regs: rr(rNONE, rNOPC, rNONE, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0fb00070, value: 0x06b00030, act: armRev, regs: rr(rNONE, rNOPC, rNONE, rNONE, rNOPC)},
	{kind: dReject, mask: 0x0fb00010, value: 0x06000010, label: "media_unallocated"},
	{kind: dReject, mask: 0x0f8000f0, value: 0x060000b0, label: "media_unallocated"},
	{kind: dReject, mask: 0x0f8000f0, value: 0x060000d0, label: "media_unallocated"},
	{kind: dEmulate, mask: 0x0f800010, value: 0x06000010, act: armMmi, regs: rr(rNOPC, rNOPC, rNONE, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0ff00030, value: 0x06800010, act: armPack, regs: rr(rNOPC, rNOPC, rNONE, rNONE, rNOPC)},
	{kind: dReject, mask: 0x0fb000f0, value: 0x06900070, label: "media_unallocated"},
	{kind: dEmulate, mask: 0x0f8f00f0, value: 0x068f0070, act: armExtend, regs: rr(rNONE, rNOPC, rNONE, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0f8000f0, value: 0x06800070, act: armExtendAdd, regs: rr(rNOPCX, rNOPC, rNONE, rNONE, rNOPC)},
}}

// a32TabARM_0111_____xxx1: the kernel's arm_cccc_0111_____xxx1_table[] (decode-arm.c).
var a32TabARM_0111_____xxx1 = &a32Table{name: "arm_cccc_0111_____xxx1_table", end: "media_unallocated", e: []a32Entry{
	{kind: dReject, mask: 0x0ff000f0, value: 0x07f000f0, label: "udf"},
	{kind: dEmulate, mask: 0x0ff00090, value: 0x07400010, act: armMulAddLong, regs: rr(rNOPC, rNOPC, rNOPC, rNONE, rNOPC)},
	{kind: dOr, mask: 0x0ff0f090, value: 0x0700f010},
	{kind: dOr, mask: 0x0ff0f0d0, value: 0x0750f010},
	{kind: dEmulate, mask: 0x0ff0f0f0, value: 0x0780f010, act: armMulAdd, regs: rr(rNOPC, rNONE, rNOPC, rNONE, rNOPC)},
	{kind: dOr, mask: 0x0ff00090, value: 0x07000010},
	{kind: dOr, mask: 0x0ff000d0, value: 0x07500010},
	{kind: dEmulate, mask: 0x0ff000f0, value: 0x07800010, act: armMulAdd, regs: rr(rNOPC, rNOPCX, rNOPC, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0ff000d0, value: 0x075000d0, act: armMulAdd, regs: rr(rNOPC, rNOPC, rNOPC, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0fa00070, value: 0x07a00050, act: armBitfield, regs: rr(rNONE, rNOPC, rNONE, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0fe0007f, value: 0x07c0001f, act: armBitfield, regs: rr(rNONE, rNOPC, rNONE, rNONE, rNONE)},
	{kind: dEmulate, mask: 0x0fe00070, value: 0x07c00010, act: armBitfield, regs: rr(rNONE, rNOPC, rNONE, rNONE, rNOPCX)},
}}

// a32TabARM_01xx: the kernel's arm_cccc_01xx_table[] (decode-arm.c).
var a32TabARM_01xx = &a32Table{name: "arm_cccc_01xx_table", end: "unallocated", e: []a32Entry{
	{kind: dReject, mask: 0x0c40f000, value: 0x0440f000, label: "ldrb_strb_pc"},
	{kind: dReject, mask: 0x0d200000, value: 0x04200000, label: "unprivileged"},
	{kind: dEmulate, mask: 0x0e100000, value: 0x04000000, act: armStore, regs: rr(rNOPCWB, rANY, rNONE, rNONE, rNONE)},
	{kind: dEmulate, mask: 0x0e100000, value: 0x04100000, act: armLoad, regs: rr(rNOPCWB, rANY, rNONE, rNONE, rNONE)},
	{kind: dEmulate, mask: 0x0e100000, value: 0x06000000, act: armStore, regs: rr(rNOPCWB, rANY, rNONE, rNONE, rNOPC)},
	{kind: dEmulate, mask: 0x0e100000, value: 0x06100000, act: armLoad, regs: rr(rNOPCWB, rANY, rNONE, rNONE, rNOPC)},
}}

// a32TabARM_100x: the kernel's arm_cccc_100x_table[] (decode-arm.c).
var a32TabARM_100x = &a32Table{name: "arm_cccc_100x_table", end: "ldm_stm_user", e: []a32Entry{
	{kind: dCustom, mask: 0x0e400000, value: 0x08000000, act: armLdmstm},
}}

// a32TopARM: the kernel's probes_decode_arm_table[] (decode-arm.c).
var a32TopARM = &a32Table{name: "probes_decode_arm_table", end: "unallocated", e: []a32Entry{
	{kind: dTable, mask: 0xf0000000, value: 0xf0000000, sub: a32TabARM_1111},
	{kind: dTable, mask: 0x0f900080, value: 0x01000000, sub: a32TabARM_0001_0xx0____0xxx},
	{kind: dTable, mask: 0x0f900090, value: 0x01000080, sub: a32TabARM_0001_0xx0____1xx0},
	{kind: dTable, mask: 0x0f0000f0, value: 0x00000090, sub: a32TabARM_0000_____1001},
	{kind: dTable, mask: 0x0f0000f0, value: 0x01000090, sub: a32TabARM_0001_____1001},
	{kind: dTable, mask: 0x0e000090, value: 0x00000090, sub: a32TabARM_000x_____1xx1},
	{kind: dTable, mask: 0x0e000000, value: 0x00000000, sub: a32TabARM_000x},
	{kind: dTable, mask: 0x0e000000, value: 0x02000000, sub: a32TabARM_001x},
	{kind: dTable, mask: 0x0f000010, value: 0x06000010, sub: a32TabARM_0110_____xxx1},
	{kind: dTable, mask: 0x0f000010, value: 0x07000010, sub: a32TabARM_0111_____xxx1},
	{kind: dTable, mask: 0x0c000000, value: 0x04000000, sub: a32TabARM_01xx},
	{kind: dTable, mask: 0x0e000000, value: 0x08000000, sub: a32TabARM_100x},
	{kind: dSimulate, mask: 0x0e000000, value: 0x0a000000, act: armBranch},
	{kind: dReject, mask: 0x0c000000, value: 0x0c000000, label: "coprocessor_svc"},
}}

// a32TabT32_1110_100x_x0xx: the kernel's t32_table_1110_100x_x0xx[] (decode-thumb.c).
var a32TabT32_1110_100x_x0xx = &a32Table{name: "t32_table_1110_100x_x0xx", end: "ldm_stm", e: []a32Entry{
	{kind: dReject, mask: 0xfe4f0000, value: 0xe80f0000, label: "ldm_stm_pc_base"},
	{kind: dReject, mask: 0xffc00000, value: 0xe8000000, label: "srs_rfe"},
	{kind: dReject, mask: 0xffc00000, value: 0xe9800000, label: "srs_rfe"},
	{kind: dReject, mask: 0xfe508000, value: 0xe8008000, label: "stm_pc"},
	{kind: dReject, mask: 0xfe50c000, value: 0xe810c000, label: "ldm_lr_pc"},
	{kind: dReject, mask: 0xfe402000, value: 0xe8002000, label: "ldm_stm_sp"},
	{kind: dCustom, mask: 0xfe400000, value: 0xe8000000, act: t32Ldmstm},
}}

// a32TabT32_1110_100x_x1xx: the kernel's t32_table_1110_100x_x1xx[] (decode-thumb.c).
var a32TabT32_1110_100x_x1xx = &a32Table{name: "t32_table_1110_100x_x1xx", end: "exclusive", e: []a32Entry{
	{kind: dOr, mask: 0xff600000, value: 0xe8600000},
	{kind: dEmulate, mask: 0xff400000, value: 0xe9400000, act: t32Ldrdstrd, regs: rr(rNOPCWB, rNOSPPC, rNOSPPC, rNONE, rNONE)},
	{kind: dSimulate, mask: 0xfff000e0, value: 0xe8d00000, act: t32TableBranch, regs: rr(rNOSP, rNONE, rNONE, rNONE, rNOSPPC)},
}}

// a32TabT32_1110_101x: the kernel's t32_table_1110_101x[] (decode-thumb.c).
var a32TabT32_1110_101x = &a32Table{name: "t32_table_1110_101x", end: "dp_unallocated", e: []a32Entry{
	{kind: dEmulate, mask: 0xff700f00, value: 0xea100f00, act: t32Tst, regs: rr(rNOSPPC, rNONE, rNONE, rNONE, rNOSPPC)},
	{kind: dOr, mask: 0xfff00f00, value: 0xeb100f00},
	{kind: dEmulate, mask: 0xfff00f00, value: 0xebb00f00, act: t32Tst, regs: rr(rNOPC, rNONE, rNONE, rNONE, rNOSPPC)},
	{kind: dEmulate, mask: 0xffcf0000, value: 0xea4f0000, act: t32Mov, regs: rr(rNONE, rNONE, rNOSPPC, rNONE, rNOSPPC)},
	{kind: dReject, mask: 0xffa00000, value: 0xeaa00000, label: "dp_unallocated"},
	{kind: dReject, mask: 0xffe00000, value: 0xeb200000, label: "dp_unallocated"},
	{kind: dReject, mask: 0xffe00000, value: 0xeb800000, label: "dp_unallocated"},
	{kind: dReject, mask: 0xffe00000, value: 0xebe00000, label: "dp_unallocated"},
	{kind: dEmulate, mask: 0xff4f7f30, value: 0xeb0d0d00, act: t32Addsub, regs: rr(rSP, rNONE, rSP, rNONE, rNOSPPC)},
	{kind: dReject, mask: 0xff4f0f00, value: 0xeb0d0d00, label: "addsub_sp_shift"},
	{kind: dEmulate, mask: 0xff4f0000, value: 0xeb0d0000, act: t32Addsub, regs: rr(rSP, rNONE, rNOPC, rNONE, rNOSPPC)},
	{kind: dEmulate, mask: 0xfe000000, value: 0xea000000, act: t32Logical, regs: rr(rNOSPPC, rNONE, rNOSPPC, rNONE, rNOSPPC)},
}}

// a32TabT32_1111_0x0x___0: the kernel's t32_table_1111_0x0x___0[] (decode-thumb.c).
var a32TabT32_1111_0x0x___0 = &a32Table{name: "t32_table_1111_0x0x___0", end: "dp_unallocated", e: []a32Entry{
	{kind: dEmulate, mask: 0xfb708f00, value: 0xf0100f00, act: t32Tst, regs: rr(rNOSPPC, rNONE, rNONE, rNONE, rNONE)},
	{kind: dOr, mask: 0xfbf08f00, value: 0xf1100f00},
	{kind: dEmulate, mask: 0xfbf08f00, value: 0xf1b00f00, act: t32Cmp, regs: rr(rNOPC, rNONE, rNONE, rNONE, rNONE)},
	{kind: dEmulate, mask: 0xfbcf8000, value: 0xf04f0000, act: t32Mov, regs: rr(rNONE, rNONE, rNOSPPC, rNONE, rNONE)},
	{kind: dReject, mask: 0xfbe08000, value: 0xf0a00000, label: "dp_unallocated"},
	{kind: dReject, mask: 0xfbc08000, value: 0xf0c00000, label: "dp_unallocated"},
	{kind: dReject, mask: 0xfbe08000, value: 0xf1200000, label: "dp_unallocated"},
	{kind: dReject, mask: 0xfbe08000, value: 0xf1800000, label: "dp_unallocated"},
	{kind: dReject, mask: 0xfbe08000, value: 0xf1e00000, label: "dp_unallocated"},
	{kind: dEmulate, mask: 0xfb4f8000, value: 0xf10d0000, act: t32Addsub, regs: rr(rSP, rNONE, rNOPC, rNONE, rNONE)},
	{kind: dEmulate, mask: 0xfa008000, value: 0xf0000000, act: t32Logical, regs: rr(rNOSPPC, rNONE, rNOSPPC, rNONE, rNONE)},
}}

// a32TabT32_1111_0x1x___0: the kernel's t32_table_1111_0x1x___0[] (decode-thumb.c).
var a32TabT32_1111_0x1x___0 = &a32Table{name: "t32_table_1111_0x1x___0", end: "dp_unallocated", e: []a32Entry{
	{kind: dOr, mask: 0xfbff8000, value: 0xf20f0000},
	{kind: dEmulate, mask: 0xfbff8000, value: 0xf2af0000, act: t32AddwsubwPc, regs: rr(rPC, rNONE, rNOSPPC, rNONE, rNONE)},
	{kind: dOr, mask: 0xfbff8f00, value: 0xf20d0d00},
	{kind: dEmulate, mask: 0xfbff8f00, value: 0xf2ad0d00, act: t32Addwsubw, regs: rr(rSP, rNONE, rSP, rNONE, rNONE)},
	{kind: dOr, mask: 0xfbf08000, value: 0xf2000000},
	{kind: dEmulate, mask: 0xfbf08000, value: 0xf2a00000, act: t32Addwsubw, regs: rr(rNOPCX, rNONE, rNOSPPC, rNONE, rNONE)},
	{kind: dEmulate, mask: 0xfb708000, value: 0xf2400000, act: t32Movw, regs: rr(rNONE, rNONE, rNOSPPC, rNONE, rNONE)},
	{kind: dEmulate, mask: 0xfb508000, value: 0xf3000000, act: t32Sat, regs: rr(rNOSPPC, rNONE, rNOSPPC, rNONE, rNONE)},
	{kind: dEmulate, mask: 0xfb708000, value: 0xf3400000, act: t32Bitfield, regs: rr(rNOSPPC, rNONE, rNOSPPC, rNONE, rNONE)},
	{kind: dEmulate, mask: 0xfbff8000, value: 0xf36f0000, act: t32Bitfield, regs: rr(rNONE, rNONE, rNOSPPC, rNONE, rNONE)},
	{kind: dEmulate, mask: 0xfbf08000, value: 0xf3600000, act: t32Bitfield, regs: rr(rNOSPPCX, rNONE, rNOSPPC, rNONE, rNONE)},
}}

// a32TabT32_1111_0xxx___1: the kernel's t32_table_1111_0xxx___1[] (decode-thumb.c).
var a32TabT32_1111_0xxx___1 = &a32Table{name: "t32_table_1111_0xxx___1", end: "branch_misc_unallocated", e: []a32Entry{
	{kind: dOr, mask: 0xfff0d7ff, value: 0xf3a08001},
	{kind: dEmulate, mask: 0xfff0d7ff, value: 0xf3a08004, act: t32Sev},
	{kind: dSimulate, mask: 0xfff0d7fc, value: 0xf3a08000, act: t32Wfe},
	{kind: dSimulate, mask: 0xfff0d000, value: 0xf3e08000, act: t32Mrs, regs: rr(rNONE, rNONE, rNOSPPC, rNONE, rNONE)},
	{kind: dReject, mask: 0xfb80d000, value: 0xf3808000, label: "system"},
	{kind: dCustom, mask: 0xf800d000, value: 0xf0008000, act: t32BranchCond},
	{kind: dOr, mask: 0xf800d001, value: 0xf000c000},
	{kind: dSimulate, mask: 0xf8009000, value: 0xf0009000, act: t32Branch},
}}

// a32TabT32_1111_100x_x0x1__1111: the kernel's t32_table_1111_100x_x0x1__1111[] (decode-thumb.c).
var a32TabT32_1111_100x_x0x1__1111 = &a32Table{name: "t32_table_1111_100x_x0x1__1111", end: "hint_unallocated", e: []a32Entry{
	{kind: dSimulate, mask: 0xfe7ff000, value: 0xf81ff000, act: t32Pldi},
	{kind: dOr, mask: 0xffd0f000, value: 0xf890f000},
	{kind: dOr, mask: 0xffd0ff00, value: 0xf810fc00},
	{kind: dOr, mask: 0xfff0f000, value: 0xf990f000},
	{kind: dSimulate, mask: 0xfff0ff00, value: 0xf910fc00, act: t32Pldi, regs: rr(rNOPCX, rNONE, rNONE, rNONE, rNONE)},
	{kind: dOr, mask: 0xffd0ffc0, value: 0xf810f000},
	{kind: dSimulate, mask: 0xfff0ffc0, value: 0xf910f000, act: t32Pldi, regs: rr(rNOPCX, rNONE, rNONE, rNONE, rNOSPPC)},
}}

// a32TabT32_1111_100x: the kernel's t32_table_1111_100x[] (decode-thumb.c).
var a32TabT32_1111_100x = &a32Table{name: "t32_table_1111_100x", end: "ldst_unallocated", e: []a32Entry{
	{kind: dReject, mask: 0xfe600000, value: 0xf8600000, label: "ldst_unallocated"},
	{kind: dReject, mask: 0xfff00000, value: 0xf9500000, label: "ldst_unallocated"},
	{kind: dReject, mask: 0xfe800d00, value: 0xf8000800, label: "ldst_unallocated"},
	{kind: dReject, mask: 0xfe800f00, value: 0xf8000e00, label: "unprivileged"},
	{kind: dReject, mask: 0xff1f0000, value: 0xf80f0000, label: "str_pc_base"},
	{kind: dReject, mask: 0xff10f000, value: 0xf800f000, label: "str_pc"},
	{kind: dSimulate, mask: 0xff7f0000, value: 0xf85f0000, act: t32LdrLit, regs: rr(rPC, rANY, rNONE, rNONE, rNONE)},
	{kind: dOr, mask: 0xffe00800, value: 0xf8400800},
	{kind: dEmulate, mask: 0xffe00000, value: 0xf8c00000, act: t32Ldrstr, regs: rr(rNOPCX, rANY, rNONE, rNONE, rNONE)},
	{kind: dEmulate, mask: 0xffe00fc0, value: 0xf8400000, act: t32Ldrstr, regs: rr(rNOPCX, rANY, rNONE, rNONE, rNOSPPC)},
	{kind: dSimulate, mask: 0xfe5f0000, value: 0xf81f0000, act: t32LdrLit, regs: rr(rPC, rNOSPPCX, rNONE, rNONE, rNONE)},
	{kind: dOr, mask: 0xfec00800, value: 0xf8000800},
	{kind: dEmulate, mask: 0xfec00000, value: 0xf8800000, act: t32Ldrstr, regs: rr(rNOPCX, rNOSPPCX, rNONE, rNONE, rNONE)},
	{kind: dEmulate, mask: 0xfe800fc0, value: 0xf8000000, act: t32Ldrstr, regs: rr(rNOPCX, rNOSPPCX, rNONE, rNONE, rNOSPPC)},
}}

// a32TabT32_1111_1010___1111: the kernel's t32_table_1111_1010___1111[] (decode-thumb.c).
var a32TabT32_1111_1010___1111 = &a32Table{name: "t32_table_1111_1010___1111", end: "dp_reg_unallocated", e: []a32Entry{
	{kind: dReject, mask: 0xffe0f080, value: 0xfa60f080, label: "dp_reg_unallocated"},
	{kind: dEmulate, mask: 0xff8ff080, value: 0xfa0ff080, act: t32SignExtend, regs: rr(rNONE, rNONE, rNOSPPC, rNONE, rNOSPPC)},
	{kind: dReject, mask: 0xff80f0b0, value: 0xfa80f030, label: "dp_reg_unallocated"},
	{kind: dReject, mask: 0xffb0f080, value: 0xfab0f000, label: "dp_reg_unallocated"},
	{kind: dOr, mask: 0xff80f080, value: 0xfa80f000},
	{kind: dOr, mask: 0xff80f080, value: 0xfa00f080},
	{kind: dOr, mask: 0xfff0f0c0, value: 0xfa80f080},
	{kind: dOr, mask: 0xfff0f0f0, value: 0xfaa0f080},
	{kind: dEmulate, mask: 0xff80f0f0, value: 0xfa00f000, act: t32Media, regs: rr(rNOSPPC, rNONE, rNOSPPC, rNONE, rNOSPPC)},
	{kind: dOr, mask: 0xfff0f0f0, value: 0xfab0f080},
	{kind: dEmulate, mask: 0xfff0f0c0, value: 0xfa90f080, act: t32Reverse, regs: rr(rNOSPPC, rNONE, rNOSPPC, rNONE, rSAMEAS16)},
}}

// a32TabT32_1111_1011_0: the kernel's t32_table_1111_1011_0[] (decode-thumb.c).
var a32TabT32_1111_1011_0 = &a32Table{name: "t32_table_1111_1011_0", end: "mul_unallocated", e: []a32Entry{
	{kind: dReject, mask: 0xfff0f0f0, value: 0xfb00f010, label: "mul_unallocated"},
	{kind: dReject, mask: 0xfff0f0f0, value: 0xfb70f010, label: "mul_unallocated"},
	{kind: dOr, mask: 0xfff0f0c0, value: 0xfb10f000},
	{kind: dEmulate, mask: 0xff80f0e0, value: 0xfb00f000, act: t32MulAdd, regs: rr(rNOSPPC, rNONE, rNOSPPC, rNONE, rNOSPPC)},
	{kind: dReject, mask: 0xfff000f0, value: 0xfb700010, label: "mul_unallocated"},
	{kind: dOr, mask: 0xfff000c0, value: 0xfb100000},
	{kind: dEmulate, mask: 0xff8000c0, value: 0xfb000000, act: t32MulAdd2, regs: rr(rNOSPPC, rNOSPPCX, rNOSPPC, rNONE, rNOSPPC)},
}}

// a32TabT32_1111_1011_1: the kernel's t32_table_1111_1011_1[] (decode-thumb.c).
var a32TabT32_1111_1011_1 = &a32Table{name: "t32_table_1111_1011_1", end: "divide_unallocated", e: []a32Entry{
	{kind: dOr, mask: 0xfff000f0, value: 0xfbe00060},
	{kind: dOr, mask: 0xfff000c0, value: 0xfbc00080},
	{kind: dOr, mask: 0xffe000e0, value: 0xfbc000c0},
	{kind: dEmulate, mask: 0xff9000f0, value: 0xfb800000, act: t32MulAddLong, regs: rr(rNOSPPC, rNOSPPC, rNOSPPC, rNONE, rNOSPPC)},
}}

// a32TopT32: the kernel's probes_decode_thumb32_table[] (decode-thumb.c).
var a32TopT32 = &a32Table{name: "probes_decode_thumb32_table", end: "coprocessor", e: []a32Entry{
	{kind: dTable, mask: 0xfe400000, value: 0xe8000000, sub: a32TabT32_1110_100x_x0xx},
	{kind: dTable, mask: 0xfe400000, value: 0xe8400000, sub: a32TabT32_1110_100x_x1xx},
	{kind: dTable, mask: 0xfe000000, value: 0xea000000, sub: a32TabT32_1110_101x},
	{kind: dReject, mask: 0xfc000000, value: 0xec000000, label: "coprocessor"},
	{kind: dTable, mask: 0xfa008000, value: 0xf0000000, sub: a32TabT32_1111_0x0x___0},
	{kind: dTable, mask: 0xfa008000, value: 0xf2000000, sub: a32TabT32_1111_0x1x___0},
	{kind: dTable, mask: 0xf8008000, value: 0xf0008000, sub: a32TabT32_1111_0xxx___1},
	{kind: dReject, mask: 0xff100000, value: 0xf9000000, label: "neon_load_store"},
	{kind: dTable, mask: 0xfe50f000, value: 0xf810f000, sub: a32TabT32_1111_100x_x0x1__1111},
	{kind: dTable, mask: 0xfe000000, value: 0xf8000000, sub: a32TabT32_1111_100x},
	{kind: dTable, mask: 0xff00f000, value: 0xfa00f000, sub: a32TabT32_1111_1010___1111},
	{kind: dTable, mask: 0xff800000, value: 0xfb000000, sub: a32TabT32_1111_1011_0},
	{kind: dTable, mask: 0xff800000, value: 0xfb800000, sub: a32TabT32_1111_1011_1},
}}

// a32TabT16_1011: the kernel's t16_table_1011[] (decode-thumb.c).
var a32TabT16_1011 = &a32Table{name: "t16_table_1011", end: "misc16", e: []a32Entry{
	{kind: dSimulate, mask: 0xff00, value: 0xb000, act: t16AddSp},
	{kind: dSimulate, mask: 0xf500, value: 0xb100, act: t16Cbz},
	{kind: dReject, mask: 0xffc0, value: 0xba80, label: "t16_unallocated"},
	{kind: dEmulate, mask: 0xf500, value: 0xb000, act: t16SignExtend},
	{kind: dCustom, mask: 0xfe00, value: 0xb400, act: t16Push},
	{kind: dCustom, mask: 0xfe00, value: 0xbc00, act: t16Pop},
	{kind: dOr, mask: 0xffff, value: 0xbf10},
	{kind: dEmulate, mask: 0xffff, value: 0xbf40, act: t16Sev},
	{kind: dSimulate, mask: 0xffcf, value: 0xbf00, act: t16Wfe},
	{kind: dReject, mask: 0xff0f, value: 0xbf00, label: "hint_unallocated"},
	{kind: dCustom, mask: 0xff00, value: 0xbf00, act: t16It},
}}

// a32TopT16: the kernel's probes_decode_thumb16_table[] (decode-thumb.c).
var a32TopT16 = &a32Table{name: "probes_decode_thumb16_table", end: "t16_unallocated", e: []a32Entry{
	{kind: dEmulate, mask: 0xf800, value: 0x2800, act: t16Cmp},
	{kind: dEmulate, mask: 0xc000, value: 0x0000, act: t16Addsub},
	{kind: dEmulate, mask: 0xffc0, value: 0x4200, act: t16Cmp},
	{kind: dEmulate, mask: 0xff80, value: 0x4280, act: t16Cmp},
	{kind: dEmulate, mask: 0xfc00, value: 0x4000, act: t16Logical},
	{kind: dReject, mask: 0xfff8, value: 0x47f8, label: "blx_pc"},
	{kind: dSimulate, mask: 0xff00, value: 0x4700, act: t16Blx},
	{kind: dReject, mask: 0xffff, value: 0x44ff, label: "add_pc_pc"},
	{kind: dCustom, mask: 0xfc00, value: 0x4400, act: t16Hiregops},
	{kind: dSimulate, mask: 0xf800, value: 0x4800, act: t16LdrLit},
	{kind: dEmulate, mask: 0xc000, value: 0x4000, act: t16Ldrhstrh},
	{kind: dEmulate, mask: 0xf000, value: 0x8000, act: t16Ldrhstrh},
	{kind: dSimulate, mask: 0xf000, value: 0x9000, act: t16Ldrstr},
	{kind: dSimulate, mask: 0xf000, value: 0xa000, act: t16Adr},
	{kind: dTable, mask: 0xf000, value: 0xb000, sub: a32TabT16_1011},
	{kind: dEmulate, mask: 0xf000, value: 0xc000, act: t16Ldmstm},
	{kind: dReject, mask: 0xfe00, value: 0xde00, label: "udf_svc"},
	{kind: dCustom, mask: 0xf000, value: 0xd000, act: t16BranchCond},
	{kind: dSimulate, mask: 0xf800, value: 0xe000, act: t16Branch},
}}
