#!/usr/bin/env bash
# Prints the peak RSS and time of `kboost sim --trials N 90` (a boosted nop
# on the CPU, x86-64) for N = 4, 10^4 and TRIALS (default 10^6), side by side:
# sim streams its states in batches, so its memory must not grow with N
# (target: under 200 MB at 10^6). Usage: scripts/bench-sim.sh [TRIALS]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
TRIALS=${1:-1000000}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/kboost" ./cmd/kboost
echo "cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
printf '%-10s %12s %10s %12s  %s\n' trials "peak RSS MB" seconds "states/s" verdict
for n in 4 10000 "$TRIALS"; do
  /usr/bin/time -o "$bin/time" -f "%M %e" "$bin/kboost" sim --trials "$n" 90 >"$bin/out" 2>"$bin/err" ||
    { cat "$bin/err" >&2; exit 1; }
  read -r kb secs <"$bin/time"
  awk -v n="$n" -v kb="$kb" -v s="$secs" -v v="$(grep '^verdict' "$bin/out" | cut -c10-70)" \
    'BEGIN { printf "%-10s %12.1f %10.2f %12.0f  %s\n", n, kb/1024, s, n/(s+0.001), v }' 
done
