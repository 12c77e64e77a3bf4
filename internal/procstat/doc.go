// Package procstat reads a process's /proc/PID/stat line: its state letter,
// parent and CPU time. The command name in the line is parenthesized and may
// itself hold spaces and parentheses, so the fields are read after the last
// ')'. Shared by the sandboxes that watch their runners, the tracer that
// finds a tree's processes and the tests that check nothing is left running.
package procstat
