// Package audit runs boost policies over the functions of a binary: it chooses
// the functions, builds the policy environment from the file (kernel config,
// special-site tables, ftrace locations), audits functions in parallel and hands
// the results back in address order. The CLI formats them.
package audit
