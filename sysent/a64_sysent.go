package sysent

import "github.com/kboost/kboost/decode"

// TableARM64 is arm64's (asm-generic numbering): AUDIT_ARCH_AARCH64.
var TableARM64 = newTable(decode.ARM64, 0xc00000b7, openARM, entriesARM64)
