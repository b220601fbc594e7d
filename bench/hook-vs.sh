#!/usr/bin/env bash
# The hook's whole-process cost against an earlier revision, in one run:
# builds nightwatch at REV (default: 1510195, the previous release) into a
# temp folder, static (CGO_ENABLED=0) as testkit.BuildNightwatch builds the
# current tree's nightwatch and nightwatch-hook, and runs
# BenchmarkHookProcess with the current dedicated hook, the current
# `nightwatch hook`, REV's `nightwatch hook`, an empty Go program and, when
# node is on PATH, the article's Node hook (bench/article-hook.js) in the
# same loop. x-baseline is the current hook over REV's (goal ≤ 1.05),
# x-node over the Node hook (goal ≤ 0.03), x-empty over the empty program
# (goal ≤ 2).
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
NIGHTWATCH_BENCH_BASELINE="$tmp/nightwatch-$rev" \
  go test -run '^$' -bench 'HookProcess' -benchtime "$benchtime" ./cmd/nightwatch/
