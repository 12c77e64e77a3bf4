#!/bin/bash
# Per-hit cost of kboost trace's probe mechanisms against native calls and
# the kernel's own uprobe, side by side in one run, on a tight loop calling
# a 7-byte function (ptprobe/testdata/target.c "loop N": tick()).
#
#   scripts/bench-trace.sh [RUNS]     (default 5; best of RUNS per row)
#
# Per-hit cost = (time with N calls - time with 0 calls) / N, so start-up
# (kboost, exec, slot mapping) is not counted. N is chosen per row so each
# run lasts about a second. The kernel uprobe row needs root (perf uprobe
# PMU through `kboost uprobe watch`); it is skipped without it.
#
# Needs gcc (scripts/setup.sh).
set -euo pipefail
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
watcher=""
cleanup() {
    [ -n "$watcher" ] && kill -INT "$watcher" 2>/dev/null && wait "$watcher" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/kboost" "$root/cmd/kboost"
gcc -O2 -fno-omit-frame-pointer -pthread -o "$work/target" "$root/ptprobe/testdata/target.c"

best() { # best wall time in seconds of RUNS runs of "$@"
    local b=""
    for _ in $(seq "$runs"); do
        local t0 t1
        t0=$(date +%s.%N)
        "$@" >/dev/null 2>&1
        t1=$(date +%s.%N)
        b=$(echo "$t0 $t1 $b" | awk '{d=$2-$1; if ($3=="" || d<$3) print d; else print $3}')
    done
    echo "$b"
}

perhit() { # NAME N CMD...: prints ns per call of the loop under CMD
    local n=$1; shift
    local t0 tn
    t0=$(best "$@" "$work/target" loop 0)
    tn=$(best "$@" "$work/target" loop "$n")
    echo "$t0 $tn $n" | awk '{printf "%.1f", ($2-$1)*1e9/$3}'
}

declare -A ns
ns[native]=$(perhit 200000000 env)
ns[jump]=$(perhit 100000000 "$work/kboost" trace --mode jump --probe tick --out /dev/null --)
ns[boost]=$(perhit 40000 "$work/kboost" trace --mode boost --probe tick --out /dev/null --)
ns[singlestep]=$(perhit 20000 "$work/kboost" trace --mode singlestep --probe tick --out /dev/null --)
if [ "$(id -u)" = 0 ]; then
    "$work/kboost" uprobe watch --interval 1h "$work/target:tick" >"$work/watch.out" 2>&1 &
    watcher=$!
    for _ in $(seq 200); do # until the probe is registered
        grep -q watching "$work/watch.out" 2>/dev/null && break
        sleep 0.1
    done
    ns[uprobe]=$(perhit 40000 env)
    kill -INT "$watcher"; wait "$watcher" 2>/dev/null || true; watcher=""
fi

echo "per-hit cost on $(nproc) CPUs, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), best of $runs"
printf "%-34s %12s %14s\n" "mechanism" "ns per call" "x native call"
for k in native jump boost singlestep uprobe; do
    [ -n "${ns[$k]:-}" ] || continue
    case $k in
    native) name="native call" ;;
    jump) name="kboost trace --mode jump" ;;
    boost) name="kboost trace --mode boost" ;;
    singlestep) name="kboost trace --mode singlestep" ;;
    uprobe) name="kernel uprobe (perf PMU)" ;;
    esac
    printf "%-34s %12s %14s\n" "$name" "${ns[$k]}" "$(echo "${ns[$k]} ${ns[native]}" | awk '{ if ($2 > 0) printf "%.1f", $1/$2; else print "-" }')"
done
echo "jump hit cost (minus the native call): $(echo "${ns[jump]} ${ns[native]}" | awk '{printf "%.1f ns", $1-$2}')"
echo "boost / singlestep per hit: $(echo "${ns[boost]} ${ns[singlestep]}" | awk '{printf "%.2f", $1/$2}')"
