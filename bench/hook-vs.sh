#!/usr/bin/env bash
# The hook's whole-process cost against an earlier revision, in one run:
# builds nightwatch at REV (default: the last commit of the previous session's
# work, b5f4c7e) into a temp folder and runs BenchmarkHookProcess with both
# binaries and an empty Go program in the same loop.
#
#   bench/hook-vs.sh [REV] [BENCHTIME]
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:-b5f4c7e}"
benchtime="${2:-200x}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$rev" | tar -x -C "$tmp"
# Built as testkit.BuildNightwatch builds the current tree (plain go build),
# so that both binaries link the same way.
(cd "$tmp" && go build -o "$tmp/nightwatch-$rev" ./cmd/nightwatch)
NIGHTWATCH_BENCH_BASELINE="$tmp/nightwatch-$rev" \
  go test -run '^$' -bench 'HookProcess' -benchtime "$benchtime" ./cmd/nightwatch/
