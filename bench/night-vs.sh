#!/usr/bin/env bash
# The night's overhead per instant job against an earlier revision, on one
# machine, in turn: builds the supervisor's test binary at REV (default:
# main) with this tree's BenchmarkNightVsBareLoop copied in (the same
# benchmark on both sides), and this tree's, then runs the benchmark with
# each in turn, COUNT times, JOBS instant jobs each, printing the load
# average before every run (the two sides alternate which goes first).
# On a shared machine only runs side by side
# compare: night/bare and the CPU figures (night-cpu-ms/job, and
# overhead-cpu-ms/job over the bare loop's) move less than the walls.
#
#   bench/night-vs.sh [REV] [COUNT] [JOBS]      # defaults: main 3 1000
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:-main}"
count="${2:-3}"
jobs="${3:-1000}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/old"
git archive "$rev" | tar -x -C "$tmp/old"
cp supervisor/night_bench_test.go supervisor/cputime_*_test.go "$tmp/old/supervisor/"
(cd "$tmp/old" && go test -c -o "$tmp/old.test" ./supervisor/)
go test -c -o "$tmp/new.test" ./supervisor/
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime; }
for i in $(seq "$count"); do
  # Each run after the first is slower on a disk that the runs before
  # freed inodes on (fs-create-ms/file): the order alternates.
  order="old new"
  [ $((i % 2)) -eq 0 ] && order="new old"
  for side in $order; do
    dir="$PWD/supervisor"
    [ "$side" = old ] && dir="$tmp/old/supervisor"
    echo "$side ($([ "$side" = old ] && echo "$rev" || echo "this tree")), run $i, load average $(load)"
    (cd "$dir" && NIGHTWATCH_BENCH_JOBS="$jobs" "$tmp/$side.test" -test.run '^$' -test.bench NightVsBareLoop -test.benchtime 1x |
      grep '^Benchmark')
  done
done
echo "load average at the end $(load)"
