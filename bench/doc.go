// Package bench is `kboost bench`: the seed's experiment and the cost of
// each probe mechanism, measured in one run and printed side by side.
//
// The build part builds a real C project with make (by default Lua, from
// Debian's orig tarball, fetched once into $HOME/.cache/kboost/src and
// checked against the checksum of Debian's .dsc) natively, under kboost
// monitor (the reference monitor's calls without backtraces, with
// backtraces but no symbol resolution, with both; every call with both),
// under strace -f and under strace -f -k. strace -f -k is slow enough that
// by default it, and the native and kboost rows it is compared with, run
// on a subset of the build (one object file); the rows say so.
//
// The probe part times a tight loop calling a 7-byte function natively,
// under kboost trace in each mode (jump, jump recording every hit, boost,
// singlestep) and under the kernel's uprobe (root; perf's uprobe PMU), and
// turns the difference between N calls and none into a cost per call.
//
// Each row is the best of Runs runs, by wall time (the build's rows run
// interleaved, a round of every row at a time); the CPU time (user and
// system, of the whole process tree, kboost's included) is reported with
// it. Result.Checks compares the figures with the targets. A
// figure depends on the machine and its load: Result says both.
package bench
