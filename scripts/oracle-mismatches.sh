#!/bin/sh
# Run the decoder's objdump oracle tests and print only their summaries:
# instructions compared, agreements, allowed classes (with the SDM reason)
# and the grouped mismatches with samples.
#
#   scripts/oracle-mismatches.sh [TEST-REGEXP]   (default: Oracle, i.e. all)
#
# KBOOST_ORACLE_N (fuzz cases per mode, default 1000000), KBOOST_ORACLE_GROUPS
# (mismatch groups printed per oracle, default 200 here) and KBOOST_ORACLE_LOG
# (append the first samples of every group to this file) are passed through.
set -eu
cd "$(dirname "$0")/.."
KBOOST_ORACLE=1 KBOOST_ORACLE_GROUPS="${KBOOST_ORACLE_GROUPS:-200}" \
	go test ./decode/ -run "${1:-Oracle}" -v -count=1 -timeout 60m 2>&1 |
	grep -E 'compared|allowed|MISMATCH|^ +[a-z0-9_]*oracle_test.go:[0-9]+: +0x|more groups|^(--- |FAIL|PASS|ok )' || true
