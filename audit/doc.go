// Package audit is the whole-file audit as a Go API: it runs boost policies
// over the functions of a binary opened with kimage. It chooses the functions
// (Select), builds the policy environment from the file (Env: kernel config,
// special-site tables, ftrace locations), audits functions in parallel (Run)
// or one by one (File) and hands the results back in address order; kboost
// audit formats them. Diff compares two builds' audits.
//
// Architectures differ only through kimage's tables: when the tables list the
// blacklist themselves (kimage.Tables.Refused) or carry the ftrace records
// (kimage.Tables.Ftrace), as an arm64 Image's do, Env uses them; notrace is
// then inferred from function entries only when no ftrace table was found.
// Boot-time patching is kimage's (kimage.Patcher): Run applies the patcher it
// is given before auditing a function, and every boundary inside an arm64 CPU
// alternative site (SetCPUCaps) then carries the reason RuleA64Alternative
// naming its cpucap, applied or not.
package audit
