#!/usr/bin/env bash
# The hook's whole-process cost against an earlier revision, in one run:
# builds nightwatch at REV (default: 1510195, the previous release) into a
# temp folder, static (CGO_ENABLED=0) as testkit.BuildNightwatch builds the
# current tree's nightwatch and nightwatch-hook, and runs
# BenchmarkHookProcess with the current dedicated hook, the current
# `nightwatch hook`, REV's `nightwatch hook`, an empty Go program and, when
# node is on PATH, the article's Node hook (bench/article-hook.js) in the
# same loop; when REV has a nightwatch-hook too (cmd/nightwatch-hook), it
# runs in the loop as well (x-old-hook: the current one over REV's, to
# measure a change of the hot path before and after). x-baseline is the
# current hook over REV's `nightwatch hook` (goal ≤ 1.05), x-node over the
# Node hook (goal ≤ 0.03), x-empty over the empty program (goal ≤ 2; its
# CPU time cpu-x-empty, its page faults hook-faults beside empty-faults).
#
#   bench/hook-vs.sh [REV] [BENCHTIME]
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:-1510195}"
benchtime="${2:-200x}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$rev" | tar -x -C "$tmp"
(cd "$tmp" && CGO_ENABLED=0 go build -o "$tmp/nightwatch-$rev" ./cmd/nightwatch)
old_hook=""
if [ -d "$tmp/cmd/nightwatch-hook" ]; then
  (cd "$tmp" && CGO_ENABLED=0 go build -o "$tmp/nightwatch-hook-$rev" ./cmd/nightwatch-hook)
  old_hook="$tmp/nightwatch-hook-$rev"
fi
NIGHTWATCH_BENCH_BASELINE="$tmp/nightwatch-$rev" NIGHTWATCH_BENCH_BASELINE_HOOK="$old_hook" \
  go test -run '^$' -bench 'HookProcess' -benchtime "$benchtime" ./cmd/nightwatch/
