package sysent

import "github.com/kboost/kboost/decode"

// O_* bits of x86 (the asm-generic values).
var openX86 = append([]flagName{
	{0o200000, "O_DIRECTORY"}, {0o400000, "O_NOFOLLOW"}, {0o40000, "O_DIRECT"}, {0o100000, "O_LARGEFILE"},
	{0o20200000, "O_TMPFILE"},
}, openCommon...)

// The x86 tables: AUDIT_ARCH_X86_64 and AUDIT_ARCH_I386.
var (
	TableX86_64 = newTable(decode.X86_64, 0xc000003e, openX86, entriesX86_64)
	TableI386   = newTable(decode.I386, 0x40000003, openX86, entriesI386)
)
