#!/usr/bin/env bash
# The whole test suite, from a fresh clone: Go modules, the pinned npm
# packages the end-to-end tests run (the real Claude Code CLI and the
# reference MCP server), static checks, race-enabled tests, short fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go modules"
go mod download
echo "== npm packages for end-to-end tests (testdata/npm)"
(cd testdata/npm && npm ci --no-audit --no-fund --loglevel=error)
# Every end-to-end test runs on each of these (testkit.ForEachClaude).
for claude in testdata/npm/node_modules/claude-code-*/bin/claude.exe; do
  echo "Claude Code CLI: $("$claude" --version)"
done

echo "== gofmt, go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './testdata/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...

echo "== builds for linux, darwin and windows, amd64 and arm64"
for os in linux darwin windows; do
  for arch in amd64 arm64; do
    CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -o /dev/null ./cmd/nightwatch
  done
done
# Every package and its tests must also compile for macOS (launchd users)
# and Windows (Task Scheduler users).
GOOS=darwin GOARCH=arm64 go vet ./...
GOOS=windows GOARCH=amd64 go vet ./...
GOOS=windows GOARCH=arm64 go vet ./...

echo "== PostgreSQL for the cluster tests"
# The cluster tests start their own PostgreSQL (internal/testkit/pgtest) on
# loopback, as a non-root user, from the Debian packages; installed when
# missing. NIGHTWATCH_REQUIRE_POSTGRES=1 turns their "not installed" skip
# into a failure, so this suite never passes without them.
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && ! command -v postgres >/dev/null; then
  echo "-- installing postgresql"
  if ! { apt-get update && apt-get install -y --no-install-recommends postgresql; }; then
    echo "!! FAILED: cannot install PostgreSQL; the cluster tests cannot run" >&2
    exit 1
  fi
fi
export NIGHTWATCH_REQUIRE_POSTGRES=1

echo "== go test -race"
go test -race -count=1 -timeout 12m ./...

echo "== Windows tests under Wine (scripts/wine-test.sh)"
# The platform-independent and Windows-specific tests run as Windows
# binaries under Debian's Wine (README, "Windows"). What they need is
# installed when missing (CI runs as root on Debian); if it cannot be had,
# or Wine cannot start, this step fails: the Windows tests are never
# silently skipped.
if ! { command -v wine64 >/dev/null || [ -x /usr/lib/wine/wine64 ]; } ||
  ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
  echo "-- installing wine64 and gcc-mingw-w64-x86-64-win32"
  if ! { apt-get update && apt-get install -y --no-install-recommends wine64 gcc-mingw-w64-x86-64-win32; }; then
    echo "!! FAILED: cannot install Wine or mingw-w64; the Windows tests did not run" >&2
    exit 1
  fi
fi
if ! ./scripts/wine-test.sh; then
  echo "!! FAILED: the Windows tests under Wine (above); if Wine itself could not start, the Windows tests did not run" >&2
  exit 1
fi

echo "== fuzzing (short)"
fuzz_time="${NIGHTWATCH_FUZZTIME:-10s}"
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when a -fuzztime duration ends while a worker is mid-input
# (golang/go#75804, fixed in Go 1.27). A real finding always writes its
# input to testdata/fuzz; a bare deadline error does not. Such a run is
# repeated once with a count budget, which has no deadline to race.
fuzz_one() {
  local pkg=$1 target=$2 log
  log=$(mktemp)
  if go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzz_time" "$pkg" >"$log" 2>&1; then
    cat "$log"; rm -f "$log"; return 0
  fi
  cat "$log"
  if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
    rm -f "$log"
    echo "-- $target: the Go fuzz deadline race (golang/go#75804), not a finding; again with a count budget"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime=3000x "$pkg"
    return
  fi
  rm -f "$log"
  return 1
}
grep -rH --include='*_test.go' --exclude-dir=node_modules -oE '^func Fuzz[A-Za-z0-9_]+' . |
  while IFS=: read -r file decl; do echo "./$(dirname "${file#./}") ${decl#func }"; done | sort -u |
  while read -r pkg target; do
    echo "-- $target ($pkg)"
    fuzz_one "$pkg" "$target"
  done
echo "== all tests passed"
