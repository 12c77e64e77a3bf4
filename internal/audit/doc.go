// Package audit runs boost policies over the functions of a binary: it chooses
// the functions, builds the policy environment from the file (kernel config,
// special-site tables, ftrace locations), audits functions in parallel and hands
// the results back in address order. The CLI formats them.
//
// Architectures differ only through kimage's tables: when the tables list the
// blacklist themselves (kimage.Tables.Refused) or carry the ftrace records
// (kimage.Tables.Ftrace), as an arm64 Image's do, Env uses them; notrace is
// then inferred from function entries only when no ftrace table was found.
// A Patcher rewrites code the way the kernel does at boot before it is
// audited: return thunks on x86 (NewReturnPatcher), the first patchable-entry
// NOP of every traced function on arm64 (NewFtraceInitPatcher), and the arm64
// CPU alternatives of a chosen set of cpucaps (Patcher.SetCPUCaps); every
// boundary inside an alternative site then carries the reason
// RuleA64Alternative naming its cpucap, applied or not.
package audit
