#!/usr/bin/env bash
# The whole test suite, from a fresh clone: Go modules, the pinned npm
# packages the end-to-end tests run (the real Claude Code CLI and the
# reference MCP server), static checks, race-enabled tests, the Windows
# tests under Wine, short fuzzing.
#
# Every step runs even when an earlier one failed (only a missing tool stops
# the script), each says what it does and how long it took, a long step
# says every minute that it is still going, and the script ends with a
# summary of what failed and the command that reruns just that.
set -uo pipefail
cd "$(dirname "$0")/.."

failures=() # "what failed|command that reruns it"
# The full output of go test is kept here for reading after a failure.
logs=$(mktemp -d "${TMPDIR:-/tmp}/nightwatch-test.XXXXXX")

elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# heartbeat prints a line every minute while a long step runs, so a silence
# is never a hang in disguise. Stopped by stop_heartbeat.
heartbeat() {
  local what=$1 start=$SECONDS
  (while sleep 60; do echo "   … $what: still running ($(elapsed $((SECONDS - start))))"; done) &
  hb_pid=$!
}
stop_heartbeat() { kill "$hb_pid" 2>/dev/null; wait "$hb_pid" 2>/dev/null; }

# step NAME RERUN COMMAND…: runs COMMAND; on failure records NAME with
# RERUN, the command a person types to run just that again.
step() {
  local name=$1 rerun=$2 start=$SECONDS rc
  shift 2
  echo "== $name"
  heartbeat "$name"
  "$@"
  rc=$?
  stop_heartbeat
  echo "   ($name: $(elapsed $((SECONDS - start))), exit $rc)"
  if [ $rc -ne 0 ]; then
    failures+=("$name|$rerun")
  fi
  return $rc
}

die() {
  echo "!! $*" >&2
  exit 1
}

suite_start=$SECONDS

# The HTML report's layout is tested in headless Chromium (report's
# TestHTMLInHeadlessBrowser, at desktop and phone width). When it is missing
# it is installed (as root, from Debian) in the background while the modules,
# the npm packages, the static checks and the cross-builds run, so it adds
# no time; the step "chromium" below waits for it before anything else uses
# apt-get. If it cannot be installed, that test fails and says so.
chromium_pid=
have_chromium() { command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; }
if [ -z "${NIGHTWATCH_CHROMIUM:-}" ] && ! have_chromium; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "-- installing chromium in the background (log: $logs/chromium-install)"
    (apt-get update && apt-get install -y --no-install-recommends chromium) >"$logs/chromium-install" 2>&1 &
    chromium_pid=$!
  fi
fi
chromium_ready() {
  if [ -n "$chromium_pid" ]; then
    wait "$chromium_pid" || { tail -n 20 "$logs/chromium-install"; }
  fi
  if [ -n "${NIGHTWATCH_CHROMIUM:-}" ] || have_chromium; then
    echo "-- headless browser: ${NIGHTWATCH_CHROMIUM:-$(command -v chromium chromium-browser google-chrome | head -n 1)}"
    return 0
  fi
  echo "!! no Chromium (not root, no apt-get, or the install failed): the HTML report's browser test will fail; install chromium or set NIGHTWATCH_CHROMIUM" >&2
  return 1
}

step "go modules" "go mod download" go mod download || die "cannot download the Go modules; nothing else can run"
module=$(go list -m)
# The race-enabled test binaries are compiled in the background from here
# on (go test -exec true: built, vetted, linked, nothing run), while the
# npm packages download and the checks and cross-builds below run; the go
# test step then finds every package compiled in the build cache, and its
# first packages (the longest) start at once. A failure here is only a
# cold cache: the step below builds again and reports what does not.
(go test -race -count=1 -exec true ./... >"$logs/race-build" 2>&1) &
race_build_pid=$!
npm_ci() { (cd testdata/npm && npm ci --no-audit --no-fund --loglevel=error); }
step "npm packages for end-to-end tests (testdata/npm)" "(cd testdata/npm && npm ci)" npm_ci ||
  die "cannot install the pinned npm packages; the end-to-end tests cannot run"
# Every end-to-end test runs on each of these (testkit.ForEachClaude).
for claude in testdata/npm/node_modules/claude-code-*/bin/claude.exe; do
  echo "Claude Code CLI: $("$claude" --version)"
done

gofmt_check() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './testdata/*'))
  if [ -n "$unformatted" ]; then
    echo "gofmt would change:"
    echo "$unformatted"
    return 1
  fi
}
step "gofmt" "gofmt -l ." gofmt_check
step "go vet (this machine)" "go vet ./..." go vet ./...

# Builds for every supported target; every package and its tests must also
# compile and vet for macOS (launchd users) and Windows (Task Scheduler
# users). One line per target, so a slow cold build is never silent.
cross() {
  local rc=0 os arch
  for os in linux darwin windows; do
    for arch in amd64 arm64; do
      echo "-- build $os/$arch"
      CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -o /dev/null ./cmd/nightwatch || rc=1
      CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -o /dev/null ./cmd/nightwatch-hook || rc=1
    done
  done
  # Vet type-checks the packages and their tests for a target; nightwatch
  # has no architecture-specific file (no _amd64/_arm64 or arch build tag),
  # so one architecture per OS covers its code, and the builds above cover
  # every target's dependencies and linking.
  for target in darwin/arm64 windows/amd64; do
    echo "-- vet $target"
    GOOS=${target%/*} GOARCH=${target#*/} go vet ./... || rc=1
  done
  return $rc
}
step "builds for linux, darwin and windows, amd64 and arm64; vet for darwin and windows" \
  "GOOS=<os> GOARCH=<arch> go build ./cmd/nightwatch ./cmd/nightwatch-hook (the failing target is above)" cross

step "chromium for the HTML report's browser test (installed in the background)" "apt-get install -y chromium" chromium_ready

# The cluster tests start their own PostgreSQL (internal/testkit/pgtest) on
# loopback, as a non-root user, from the Debian packages; installed when
# missing. NIGHTWATCH_REQUIRE_POSTGRES=1 turns their "not installed" skip
# into a failure, so this suite never passes without them.
postgres() {
  if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || command -v postgres >/dev/null; then
    echo "-- PostgreSQL is installed"
    return 0
  fi
  echo "-- installing postgresql"
  apt-get update && apt-get install -y --no-install-recommends postgresql
}
step "PostgreSQL for the cluster tests" "apt-get install postgresql" postgres
export NIGHTWATCH_REQUIRE_POSTGRES=1

# The packages whose end-to-end tests run the real Claude Code CLI, longest
# first (a loaded CI run: supervisor 397 s, cluster 332, chaos 242, session
# 187, cmd/nightwatch 144, hook 132, security 112, internal/testkit 107).
# go test starts the packages' test runs strictly in the order they are
# named (cmd/go chains them in that order), at most -p at a time, so with ./...
# (alphabetical) the longest, supervisor, started among the last and its
# minutes were the step's tail. Named first, the longest runs overlap the
# short ones instead. A package missing from this list
# still runs (after these); one listed that no longer exists is dropped.
heavy_packages=(supervisor cluster chaos session cmd/nightwatch hook security internal/testkit)
# test_packages prints every package of the module, the heavy ones first.
test_packages() {
  local all p
  all=$(go list ./...) || return 1
  for p in "${heavy_packages[@]}"; do
    grep -qxF "$module/$p" <<<"$all" && echo "$module/$p"
  done
  grep -vxF -f <(printf "$module/%s\n" "${heavy_packages[@]}") <<<"$all"
}
# How many packages' tests run at once: go test's default (-p, the number
# of CPUs) unless NIGHTWATCH_GOTEST_P says otherwise. The end-to-end
# packages are CPU-bound by the Claude Code CLIs they start (about 3
# CPU-seconds a session on a loaded 2-core machine), so more at a time on
# 2 cores would only stretch each package towards its 12-minute timeout.
gotest_p=${NIGHTWATCH_GOTEST_P:-}

# go test's own output goes to a log; what is printed is the packages'
# results as they finish and, for a failing package, its output. The
# summary names each failing test with the command that reruns it.
gotest() {
  local pkgs
  wait "$race_build_pid" # the background build above: the two would only compete
  pkgs=$(test_packages) || pkgs=./...
  echo "-- go test${gotest_p:+ -p $gotest_p}, in this order: $(echo $pkgs | sed "s|$module/||g" | cut -c1-200)…"
  # shellcheck disable=SC2086 # one word per package
  go test -race -count=1 -timeout 12m ${gotest_p:+-p "$gotest_p"} $pkgs >"$logs/gotest" 2>&1 &
  local pid=$! printed=0 rc
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2
    printed=$(show_results "$printed")
  done
  wait "$pid"
  rc=$?
  show_results "$printed" >/dev/null
  return $rc
}
# show_results prints (to stderr) the result lines of the log past line $1:
# each package's ok or FAIL, and a failing test's name and messages, not the
# debug output a failing end-to-end test logs (that stays in the log). It
# echoes the number of lines read.
show_results() {
  local from=$1 total
  total=$(wc -l <"$logs/gotest")
  if [ "$total" -gt "$from" ]; then
    sed -n "$((from + 1)),${total}p" "$logs/gotest" |
      grep -E '^(ok|FAIL|---|panic:|\?|\s+\S+_test\.go:|    --- )' |
      grep -vE '^\?' >&2
  fi
  echo "$total"
}
step "go test -race (every package, both Claude Code CLIs)" \
  "go test -race -count=1 ./... (full output: $logs/gotest)" gotest
if [ -s "$logs/gotest" ]; then
  # A failing test with the package it belongs to: "--- FAIL: TestX" lines
  # come before their package's "FAIL<tab>pkg" line.
  while IFS='|' read -r pkg test; do
    failures+=("  test $test ($pkg)|go test -race -count=1 -run '^${test}\$' ./${pkg#github.com/nightwatch-dev/nightwatch/}")
  done < <(awk '
    /^--- FAIL: / { tests[n++] = $3 }
    /^FAIL\t/ { for (i = 0; i < n; i++) print $2 "|" tests[i]; n = 0 }
  ' "$logs/gotest")
  grep -E '^(FAIL|ok)\s' "$logs/gotest" | grep -E '^FAIL\s' | grep -E 'build failed|setup failed' |
    while read -r _ pkg _; do echo "!! $pkg did not build"; done
fi

# The platform-independent and Windows-specific tests run as Windows
# binaries under Debian's Wine (README, "Windows"). What they need is
# installed when missing (CI runs as root on Debian); if it cannot be had,
# or Wine cannot start, this step fails: the Windows tests are never
# silently skipped.
windows_tests() {
  if ! { command -v wine64 >/dev/null || [ -x /usr/lib/wine/wine64 ]; } ||
    ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
    echo "-- installing wine64 and gcc-mingw-w64-x86-64-win32"
    if ! { apt-get update && apt-get install -y --no-install-recommends wine64 gcc-mingw-w64-x86-64-win32; }; then
      echo "!! cannot install Wine or mingw-w64; the Windows tests did not run" >&2
      return 1
    fi
  fi
  ./scripts/wine-test.sh
}
# The Windows tests under Wine run in the background, beside the fuzzing
# below: neither needs the other, and each spends part of its time not
# computing (Wine starting its server and prefix; a fuzz target runs for a
# fixed time whatever it gets of the CPU). One after the other they took
# about 1 and 1.5 minutes. Wine's output is kept and shown whole after the
# fuzzing, as its own step.
wine_start=$SECONDS
echo "== Windows tests under Wine (in the background beside the fuzzing; output after it)"
windows_tests >"$logs/wine" 2>&1 &
wine_pid=$!
wine_done() {
  local rc
  wait "$wine_pid"
  rc=$?
  cat "$logs/wine"
  echo "   (Windows tests under Wine ran $(elapsed $((SECONDS - wine_start))) in all, beside the fuzzing)"
  return $rc
}

# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when a -fuzztime duration ends while a worker is mid-input
# (golang/go#75804, fixed in Go 1.27). A real finding always writes its
# input to testdata/fuzz; a bare deadline error does not. Such a run is
# repeated once with a count budget, which has no deadline to race.
#
# Each package's instrumented test binary is built once (go test -c -fuzz),
# not once per target, and the builds run one after another in the
# background while the targets before them fuzz: a `go test -fuzz` per
# target spent about 3 of its 8.6 s building (the step took 3m00s at 5 s a
# target). The binary runs as go test would run it: in its package's
# folder (testdata/fuzz holds the corpus and takes a finding), with go
# test's cache of interesting inputs. 3 s a target keeps the step near a
# minute and a half on 2 cores; the corpora in testdata/fuzz run in every
# plain go test. NIGHTWATCH_FUZZTIME=2m fuzzes for real.
fuzz_time="${NIGHTWATCH_FUZZTIME:-3s}"
fuzz_cache="$(go env GOCACHE)/fuzz"
fuzz_bins="$logs/fuzz-bin"
# fuzz_bin DIR: the path of DIR's (./pkg) instrumented test binary.
fuzz_bin() { echo "$fuzz_bins/$(echo "${1#./}" | tr / _).test"; }
# fuzz_build DIR…: builds each package's binary in turn; a build that fails
# leaves its log beside where the binary would be, and no binary.
fuzz_build() {
  local dir bin
  for dir in "$@"; do
    bin=$(fuzz_bin "$dir")
    if go test -c -fuzz=. -o "$bin.tmp" "$dir" >"$bin.log" 2>&1; then
      mv "$bin.tmp" "$bin"
    fi
    touch "$bin.done"
  done
}
# fuzz_run DIR TARGET BUDGET: runs TARGET of DIR's binary for BUDGET.
fuzz_run() {
  local dir=$1 target=$2 budget=$3 bin
  bin=$(fuzz_bin "$dir")
  (cd "$dir" && "$bin" -test.paniconexit0 -test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$budget" \
    -test.fuzzcachedir="$fuzz_cache/$module/${dir#./}")
}
fuzz_one() {
  local dir=$1 target=$2 log bin
  bin=$(fuzz_bin "$dir")
  while [ ! -e "$bin.done" ]; do sleep 0.2; done
  if [ ! -x "$bin" ]; then
    cat "$bin.log"
    return 1
  fi
  log=$(mktemp)
  if fuzz_run "$dir" "$target" "$fuzz_time" >"$log" 2>&1; then
    grep '^fuzz: elapsed' "$log" | tail -n 1
    rm -f "$log"
    return 0
  fi
  cat "$log"
  if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
    rm -f "$log"
    echo "-- $target: the Go fuzz deadline race (golang/go#75804), not a finding; again with a count budget"
    fuzz_run "$dir" "$target" 3000x
    return
  fi
  rm -f "$log"
  return 1
}
fuzz_all() {
  local rc=0 targets builder
  mkdir -p "$fuzz_bins"
  targets=$(grep -rH --include='*_test.go' --exclude-dir=node_modules -oE '^func Fuzz[A-Za-z0-9_]+' . |
    while IFS=: read -r file decl; do echo "./$(dirname "${file#./}") ${decl#func }"; done | sort -u)
  # shellcheck disable=SC2046 # one word per package folder
  fuzz_build $(echo "$targets" | cut -d' ' -f1 | uniq) &
  builder=$!
  while read -r pkg target; do
    [ -n "$pkg" ] || continue # no target at all: <<< gives one empty line
    echo "-- $target ($pkg)"
    if ! fuzz_one "$pkg" "$target"; then
      failures+=("  fuzz $target|go test -run='^\$' -fuzz='^${target}\$' -fuzztime=$fuzz_time $pkg")
      rc=1
    fi
  done <<<"$targets"
  wait "$builder"
  rm -rf "$fuzz_bins"
  return $rc
}
step "fuzzing (short: $fuzz_time a target)" "(each failing target is listed below)" fuzz_all
step "Windows tests under Wine" "./scripts/wine-test.sh" wine_done

echo
echo "== summary ($(elapsed $((SECONDS - suite_start))) in all)"
if [ ${#failures[@]} -eq 0 ]; then
  echo "all tests passed"
  exit 0
fi
echo "FAILED:"
for f in "${failures[@]}"; do
  echo "  ${f%%|*}"
  echo "      rerun: ${f#*|}"
done
exit 1
