#!/usr/bin/env bash
# Runs every Go fuzz target in the module, one at a time, for DURATION each
# (a Go -fuzztime: 30s, 5m, or a count such as 100000x), keeps the new corpus
# entries under each package's testdata/fuzz/FuzzName/ and prints a table:
# target, executions, new corpus entries, result.
#
# Usage: scripts/fuzz.sh [DURATION] [REGEX]
#   REGEX selects targets by "pkg/dir.FuzzName" (extended regex; default all).
# Environment: FUZZ_PARALLEL (fuzz workers per target, default 1),
#   FUZZ_NICE (niceness, default 10), FUZZ_KEEP=0 (do not copy new entries
#   into testdata/fuzz), FUZZ_LOG (directory for the per-target logs).
# Exit status: 0 when no target failed, 1 when one did (its failing input is
# written to testdata/fuzz/FuzzName/ by Go, the log path is in the table).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
dur=${1:-30s}
sel=${2:-.}
par=${FUZZ_PARALLEL:-1}
nicen=${FUZZ_NICE:-10}
keep=${FUZZ_KEEP:-1}
work=$(mktemp -d /tmp/kboost-fuzz.XXXXXX)
logs=${FUZZ_LOG:-$work/logs}
mkdir -p "$logs"
# The logs are kept when a target failed (or FUZZ_LOG names their place).
failed=0
trap 'if [ "$failed" != 0 ] && [ -z "${FUZZ_LOG:-}" ]; then rm -rf "$work/bin" "$work/cache"; else rm -rf "$work"; fi' EXIT

# Targets as "dir name", from the test files git knows (or all, outside git).
files=$(git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go' -not -path '*/testdata/*')
targets=$(grep -H -o -E '^func Fuzz[A-Za-z0-9_]*\(' $files |
  sed -E 's#^(\./)?##; s#^([^:]*/)?[^/:]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#\1 \2#; s#^/? #. #; s#/ # #' |
  sort -u | while read -r dir name; do
    if echo "$dir.$name" | grep -q -E -- "$sel"; then echo "$dir $name"; fi
  done)
if [ -z "$targets" ]; then echo "fuzz.sh: no fuzz target matches $sel" >&2; exit 2; fi

rows=()
total=0
built=""
printf '%-45s %12s %5s  %s\n' target executions new result
while read -r dir name; do
  bin=$work/bin/$(echo "$dir" | tr / _).test
  if [[ " $built " != *" $dir "* ]]; then
    # One instrumented test binary per package: -fuzz turns coverage
    # instrumentation on; the binary then runs each target of the package.
    mkdir -p "$work/bin"
    if ! go test -c -fuzz . -o "$bin" "./$dir" >"$logs/build-$(basename "$bin").log" 2>&1; then
      cat "$logs/build-$(basename "$bin").log" >&2
      rows+=("$dir.$name|0|0|FAIL (build)")
      failed=1
      continue
    fi
    built="$built $dir"
  fi
  cache=$work/cache/$(echo "$dir" | tr / _)
  log=$logs/$(echo "$dir" | tr / _).$name.log
  rc=0
  (cd "$dir" && nice -n "$nicen" "$bin" -test.run '^$' -test.fuzz "^$name\$" \
    -test.fuzztime "$dur" -test.parallel "$par" -test.fuzzcachedir "$cache") >"$log" 2>&1 || rc=$?
  execs=$(grep -o -E 'execs: [0-9]+' "$log" | tail -1 | grep -o -E '[0-9]+' || true)
  execs=${execs:-0}
  total=$((total + execs))
  # New interesting inputs land in the private cache; keep them with the
  # package (names are content hashes, so copying is idempotent).
  fresh=0
  if [ -d "$cache/$name" ]; then
    for e in "$cache/$name"/*; do
      [ -e "$e" ] || continue
      dst=$dir/testdata/fuzz/$name/$(basename "$e")
      if [ ! -e "$dst" ]; then
        fresh=$((fresh + 1))
        if [ "$keep" = 1 ]; then mkdir -p "$(dirname "$dst")"; cp "$e" "$dst"; fi
      fi
    done
  fi
  if [ "$rc" = 0 ]; then
    result=ok
  elif grep -q 'Failing input written to' "$log"; then
    result="FAIL: $(grep -o -E 'testdata/fuzz/[^ ]+' "$log" | head -1) (log $log)"
    failed=1
  elif grep -q 'context deadline exceeded' "$log" && ! grep -q 'panic:' "$log"; then
    # Go 1.26's coordinator can report its own -fuzztime deadline as a
    # failure (golang/go#75804) without any failing input: not a finding.
    result="ok (go#75804 deadline race)"
  else
    result="FAIL (log $log)"
    failed=1
  fi
  rows+=("$dir.$name|$execs|$fresh|$result")
  printf '%-45s %12s %5s  %s\n' "$dir.$name" "$execs" "$fresh" "$result"
done <<<"$targets"

echo
printf '%-45s %12s %5s  %s\n' target executions new result
for r in "${rows[@]}"; do
  IFS='|' read -r t e n res <<<"$r"
  printf '%-45s %12s %5s  %s\n' "$t" "$e" "$n" "$res"
done
printf '%-45s %12s\n' "total ($dur per target)" "$total"
if [ "$failed" != 0 ] || [ -n "${FUZZ_LOG:-}" ]; then echo "logs: $logs"; fi
exit "$failed"
