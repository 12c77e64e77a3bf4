#!/usr/bin/env bash
# Takes the screenshots of docs/pictures from kboost's real output in headless
# Chromium (internal/cli TestDocsScreenshots) and records each page's SHA-256
# next to its PNG; TestDocsPicturesFresh fails when a page no longer matches.
# Look at the PNGs after running it.
set -euo pipefail
cd "$(dirname "$0")/.."
KBOOST_SCREENSHOTS=1 go test -count=1 -run '^TestDocsScreenshots$' -v ./internal/cli | grep -E '\.png|FAIL|ok' || true
ls -la docs/pictures
