package sysent

import "github.com/kboost/kboost/decode"

// O_* bits of arm and arm64 (arch/arm{,64}/include/uapi/asm/fcntl.h).
var openARM = append([]flagName{
	{0o40000, "O_DIRECTORY"}, {0o100000, "O_NOFOLLOW"}, {0o200000, "O_DIRECT"}, {0o400000, "O_LARGEFILE"},
	{0o20040000, "O_TMPFILE"},
}, openCommon...)

// TableARM is 32-bit ARM's EABI table (common + eabi): AUDIT_ARCH_ARM.
var TableARM = newTable(decode.ARM, 0x40000028, openARM, entriesARM, decode.Thumb)
