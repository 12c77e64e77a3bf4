// Package monitor is kboost's reference monitor: it runs a process tree
// under package tracer, records every selected system call with its decoded
// arguments (package sysent) and result, enforces a policy file by failing
// denied calls with EPERM, and summarises the run.
//
// Records go to their own writer (a file, as JSON lines or text), never to
// the tracee's stdout or stderr. Arguments are decoded at the call's entry
// (a path may be gone at its exit) and written at its exit, in the order the
// calls return.
package monitor
