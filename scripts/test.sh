#!/usr/bin/env bash
# Runs every kboost test, including the oracle tests (objdump over real Debian
# kernels and /usr/bin, the kernel's own rules, the host kernel's uprobes, QEMU).
# Usage: scripts/test.sh [-short]   (-short: unit tests only, no downloads)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
scripts/setup.sh

echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then echo "gofmt needed:"; echo "$bad"; exit 1; fi
echo "== go vet"
go vet ./...
GOOS=darwin go vet ./... # stubs keep non-Linux builds honest
echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

if [ "${1:-}" = "-short" ]; then
  go test -short ./...
  exit 0
fi
echo "== tests (with oracles)"
export KBOOST_ORACLE=1
if [ "$(id -u)" = 0 ]; then export KBOOST_ROOT=1; fi
# -v so that the oracle tests' agreement tables and counts (t.Log) reach the log;
# the full output, RUN lines included, is kept in /tmp/kboost-test.log.
go test -v -timeout 85m ./... 2>&1 | tee /tmp/kboost-test.log | grep -v -E '^=== (RUN|PAUSE|CONT|NAME)'
echo "== fuzz (every Go fuzz target for 1s: a smoke run; the campaigns are in the README)"
scripts/fuzz.sh 1s
