#!/usr/bin/env bash
# The audit HTML report of a whole Debian kernel: its size (target < 30 MB)
# and how long headless Chromium takes to open it (target < 5 s: navigation
# to the end of the load event, the report's script included), next to the
# time `kboost audit --format html` and `audit --summary` take.
# Usage: scripts/bench-report.sh [VMLINUX KALLSYMS]   (default: the cached
# Debian amd64 6.1 vmlinux and kallsyms that the oracle tests fetch)
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${KBOOST_CACHE:-$HOME/.cache/kboost}
vmlinux=${1:-$(ls "$cache"/vmlinux/linux-image-*-amd64_*_amd64.elf 2>/dev/null | tail -1)}
# The kallsyms must be the same package's: pair it by the vmlinux's file name
# (a newest-file glob paired 6.1's vmlinux with 6.12's kallsyms).
kallsyms=${2:-}
if [ -z "$kallsyms" ] && [ -n "$vmlinux" ]; then
  kallsyms="$cache/kallsyms/$(basename "$vmlinux" .elf).txt"
  [ -f "$kallsyms" ] || kallsyms=
fi
if [ -z "$vmlinux" ] || [ -z "$kallsyms" ]; then
  echo "bench-report: no cached Debian kernel: run 'KBOOST_ORACLE=1 go test -run TestReturnPatcherMatchesObjdump ./internal/cli' once, or give VMLINUX KALLSYMS" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/kboost" ./cmd/kboost
go build -o "$tmp/pageload" ./internal/browser/pageload
echo "kernel: $(basename "$vmlinux"); machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
s=$(date +%s.%N); "$tmp/kboost" audit "$vmlinux" --symbols "$kallsyms" --summary > /dev/null; e=$(date +%s.%N)
printf 'audit --summary:       %.2f s\n' "$(echo "$e - $s" | bc)"
s=$(date +%s.%N); "$tmp/kboost" audit "$vmlinux" --symbols "$kallsyms" --format html > "$tmp/report.html"; e=$(date +%s.%N)
printf 'audit --format html:   %.2f s\n' "$(echo "$e - $s" | bc)"
size=$(stat -c %s "$tmp/report.html")
printf 'report size:           %.1f MB (target < 30 MB)\n' "$(echo "$size / 1000000" | bc -l)"
"$tmp/pageload" "$tmp/report.html" "$tmp/report.html"
echo "(the second load is with the browser warm; target < 5 s)"
