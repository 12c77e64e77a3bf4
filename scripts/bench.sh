#!/usr/bin/env bash
# Prints, from one run, kboost's speed and memory against its peers on the whole
# current Debian amd64 vmlinux (~6.6M instructions):
#   (a) kboost decode --json  vs  objdump -d            (both to /dev/null)
#   (b) kboost audit --summary vs a plain x86asm.Decode loop over the same sections
#   (c) peak memory of kboost audit vs the vmlinux size
# Each command runs RUNS times (default 3), alternating with its peer; the best
# time of each is compared. Usage: scripts/bench.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
RUNS=${1:-3}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/kboost" ./cmd/kboost
go build -o "$bin/x86asmloop" ./internal/tools/x86asmloop

# The kernel and its symbols (cached; the symbols come from booting it once).
eval "$("$bin/kboost" kernel fetch linux-image-amd64 --shell)"
echo "vmlinux: $KBOOST_VMLINUX ($(stat -c %s "$KBOOST_VMLINUX") bytes)"
echo "symbols: $KBOOST_KALLSYMS"
echo "cpus:    $(nproc)"

# best_time CMD...: the least wall-clock seconds over RUNS runs, output discarded.
best() {
  local best=999999 t
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -o "$bin/time" -f "%e" "$@" >/dev/null 2>"$bin/stderr" || { cat "$bin/stderr" >&2; exit 1; }
    t=$(tail -1 "$bin/time")
    best=$(echo "$t $best" | awk '{print ($1 < $2) ? $1 : $2}')
  done
  echo "$best"
}

a_ob=$(best objdump -d -M intel64 "$KBOOST_VMLINUX")
a_kb=$(best "$bin/kboost" decode --json "$KBOOST_VMLINUX")
b_x86=$(best "$bin/x86asmloop" "$KBOOST_VMLINUX")
b_kb=$(best "$bin/kboost" audit --summary --symbols "$KBOOST_KALLSYMS" "$KBOOST_VMLINUX")
rss() {
  /usr/bin/time -o "$bin/time" -f "%M" "$@" >/dev/null 2>&1
  tail -1 "$bin/time"
}
mem=$(rss "$bin/kboost" audit --summary --symbols "$KBOOST_KALLSYMS" "$KBOOST_VMLINUX")
mem_text=$(rss "$bin/kboost" audit --symbols "$KBOOST_KALLSYMS" "$KBOOST_VMLINUX")
mem_json=$(rss "$bin/kboost" audit --json --symbols "$KBOOST_KALLSYMS" "$KBOOST_VMLINUX")
size=$(stat -c %s "$KBOOST_VMLINUX")

echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
printf '\n%-44s %10s %10s %8s %8s\n' "comparison (best of $RUNS)" kboost peer ratio target
printf '%-44s %9ss %9ss %7.2fx %8s\n' "(a) decode --json vs objdump -d" "$a_kb" "$a_ob" "$(echo "$a_ob $a_kb" | awk '{print $1/$2}')" ">= 2x"
printf '%-44s %9ss %9ss %7.2fx %8s\n' "(b) audit --summary vs x86asm.Decode loop" "$b_kb" "$b_x86" "$(echo "$b_x86 $b_kb" | awk '{print $1/$2}')" ">= 3x"
for m in "--summary:$mem" "(text):$mem_text" "--json:$mem_json"; do
  printf '%-44s %9sM %9sM %7.2fx %8s\n' "(c) audit ${m%%:*} peak RSS vs vmlinux size" "$((${m##*:} / 1024))" "$((size / 1048576))" "$(echo "${m##*:} $size" | awk '{print ($1*1024)/$2}')" "< 2x"
done
