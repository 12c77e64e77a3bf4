#!/bin/bash
# Speed of kboost monitor against native and strace on a small C build with
# make, side by side in one run: prints the best-of-N wall time of each and
# its speed relative to native (100% = as fast as untraced).
#
#   scripts/bench-monitor.sh [N] [FILES]     (default 3 runs, 30 C files)
#
# strace -f -k runs at well under 1% of native speed (a 5 s build takes
# about 15 minutes): SKIP_STRACE_K=1 leaves it out.
#
# Needs gcc, make, strace (scripts/setup.sh) and root or ptrace rights.
set -euo pipefail
runs=${1:-3}
files=${2:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/kboost" "$root/cmd/kboost"
src="$work/src"
mkdir -p "$src"
for i in $(seq "$files"); do
    cat > "$src/f$i.c" <<C
#include <stdio.h>
#include <string.h>
int f$i(int x) { char b[64]; snprintf(b, sizeof b, "%d", x * $i); return (int)strlen(b); }
C
done
{
    echo "OBJS := \$(patsubst %.c,%.o,\$(wildcard f*.c))"
    echo "all: lib.a"
    echo "lib.a: \$(OBJS)"
    echo "	ar rcs \$@ \$^"
    echo "%.o: %.c"
    echo "	gcc -O1 -c -o \$@ \$<"
    echo "clean:"
    echo "	rm -f *.o lib.a"
} > "$src/Makefile"

best() { # best wall time in seconds of N runs of "$@" (after make clean)
    local b=""
    for _ in $(seq "$runs"); do
        make -s -C "$src" clean >/dev/null
        local t0 t1
        t0=$(date +%s.%N)
        "$@" >/dev/null 2>&1
        t1=$(date +%s.%N)
        b=$(echo "$t0 $t1 $b" | awk '{d=$2-$1; if ($3=="" || d<$3) print d; else print $3}')
    done
    echo "$b"
}

refmon=execve,execveat,open,openat,openat2,connect,accept,accept4,bind,clone,clone3,fork,vfork,mmap,mprotect
declare -a names cmds
names+=("native");                          cmds+=("make -s -C $src -j2")
names+=("kboost monitor (every call)");     cmds+=("$work/kboost monitor --out /dev/null -- make -s -C $src -j2")
names+=("kboost monitor --backtrace");      cmds+=("$work/kboost monitor --backtrace --out /dev/null -- make -s -C $src -j2")
names+=("kboost monitor (ref-mon calls) --backtrace"); cmds+=("$work/kboost monitor --syscalls $refmon --backtrace --out /dev/null -- make -s -C $src -j2")
names+=("strace -f");                       cmds+=("strace -f -qq -o /dev/null make -s -C $src -j2")
if [ "${SKIP_STRACE_K:-0}" != 1 ]; then
    names+=("strace -f -k");                cmds+=("strace -f -k -qq -o /dev/null make -s -C $src -j2")
fi

echo "make of $files C files (-j2), best of $runs, $(nproc) CPUs, $(uname -r)"
native=""
for i in "${!names[@]}"; do
    # shellcheck disable=SC2086
    t=$(best ${cmds[$i]})
    [ -z "$native" ] && native=$t
    printf "%-46s %8.3f s  %6.1f%% of native speed\n" "${names[$i]}" "$t" "$(echo "$native $t" | awk '{print 100*$1/$2}')"
done
