#!/usr/bin/env bash
# Fuzz throughput of this tree against another revision, side by side in one
# run: both binaries run the same campaigns (same -n, seed and arch),
# interleaved ABAB so that load on the machine falls on both alike. Prints
# cases per wall second and per CPU second (kboost and its sandboxes) and the
# ratio this/REV. Usage: scripts/bench-fuzz.sh REV [CASES] [ROUNDS] [ARCH...]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
REV=${1:?usage: scripts/bench-fuzz.sh REV [CASES] [ROUNDS] [ARCH...]}
CASES=${2:-20000}
ROUNDS=${3:-5}
shift $(( $# < 3 ? $# : 3 ))
ARCHES=("${@:-x86-64}")
[ ${#ARCHES[@]} -gt 0 ] || ARCHES=(x86-64)
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/rev" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/rev" "$REV"
(cd "$tmp/rev" && go build -o "$tmp/kboost-rev" ./cmd/kboost)
go build -o "$tmp/kboost-this" ./cmd/kboost
echo "cpus: $(nproc);$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "this: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (modified)'); rev: $(git rev-parse --short "$REV"); $CASES cases, $ROUNDS rounds"
printf '%-8s %-5s %12s %12s\n' arch bin "cases/s" "cases/CPU-s"
for arch in "${ARCHES[@]}"; do
  for b in this rev; do : >"$tmp/$arch-$b"; done
  for ((r = 0; r < ROUNDS; r++)); do
    for b in this rev; do
      /usr/bin/time -o "$tmp/t" -f "%e %U %S" "$tmp/kboost-$b" fuzz --arch "$arch" -n "$CASES" --seed $((r + 1)) >/dev/null 2>"$tmp/err" ||
        { [ $? -eq 1 ] || { cat "$tmp/err" >&2; exit 1; }; }
      cat "$tmp/t" >>"$tmp/$arch-$b"
    done
  done
  for b in this rev; do
    awk -v n="$CASES" -v a="$arch" -v b="$b" '{ w += $1; c += $2 + $3; k++ }
      END { printf "%-8s %-5s %12.0f %12.0f\n", a, b, n*k/w, n*k/c; print n*k/w, n*k/c > "/dev/stderr" }' \
      "$tmp/$arch-$b" 2>"$tmp/$arch-$b.rate"
  done
  read -r tw tc <"$tmp/$arch-this.rate"
  read -r rw rc <"$tmp/$arch-rev.rate"
  awk -v a="$arch" -v tw="$tw" -v tc="$tc" -v rw="$rw" -v rc="$rc" \
    'BEGIN { printf "%-8s ratio this/rev: %.3f (wall), %.3f (CPU)\n", a, tw/rw, tc/rc }'
done
