// Package sysent holds Linux system call tables for x86-64, i386, arm64 and
// ARM (EABI) — numbers, names and argument kinds — and decodes a call's
// arguments and result for printing.
//
// The tables are data: spec/linux-6.1.spec is derived from the kernel's own
// tables (syscall_64.tbl, syscall_32.tbl, arch/arm/tools/syscall.tbl,
// asm-generic/unistd.h as arm64 includes it) and the prototypes of
// include/linux/syscalls.h by `go run ./gen -extract`; tables.go is
// generated from the spec (`go generate ./sysent`). TestTablesFresh fails
// when tables.go is stale; TestOracleSpecFromKernel re-derives the spec from
// linux-source-6.1 (KBOOST_ORACLE=1).
//
// A Table belongs to one decode.Arch and is found from it or from the
// AUDIT_ARCH value the kernel reports for a stopped tracee
// (PTRACE_GET_SYSCALL_INFO).
package sysent

//go:generate go run ./gen -spec spec/linux-6.1.spec -o tables.go
