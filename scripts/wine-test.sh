#!/usr/bin/env bash
# The Windows unit-test gate: builds the Windows (amd64) test binaries of
# the packages below and runs them under Wine. Any failing test fails the
# script. Tests that cannot pass under Wine for a reason Wine has, not our
# code, are excluded by name (-test.skip) with the reason beside them; every
# other test of these packages must pass. Wine is not Windows: a pass here
# is evidence, not a Windows verdict (README, "Windows").
#
# Two things Wine needs from us:
#  - Debian's Wine 8.0 lacks bcryptprimitives.dll (Go's runtime needs its
#    ProcessPrng), so a stand-in (scripts/wine/bcryptprimitives.c, built
#    with mingw-w64) goes into a throw-away prefix.
#  - Wine 8.0 answers NtSetInformationFile(FileDispositionInformationEx)
#    with STATUS_NOT_IMPLEMENTED ("Invalid function") where Windows before
#    1607 says STATUS_INVALID_INFO_CLASS, so Go's os.RemoveAll never takes
#    its own fallback and every t.TempDir cleanup fails. No TMP location
#    helps (the call, not the folder, is refused). Each binary therefore
#    gets, through -overlay (no file in the tree), a test-only file that
#    sets Go's internal/syscall/windows.TestDeleteatFallback: deletion takes
#    the path Go itself uses on older Windows and on FAT32. Nothing else
#    changes; the product code is built as it ships.
#
#   scripts/wine-test.sh [package…]   (default: every package of the gate)
set -euo pipefail
cd "$(dirname "$0")/.."
wine=${WINE64:-$(command -v wine64 || echo /usr/lib/wine/wine64)}
cc=${MINGW_CC:-x86_64-w64-mingw32-gcc}
fail() { echo "wine-test: FAILED: $*" >&2; exit 1; }
[ -x "$wine" ] || fail "no wine64 ($wine); install the Debian package wine64"
command -v "$cc" >/dev/null || fail "no $cc; install gcc-mingw-w64-x86-64-win32"

# Package → tests excluded under Wine (a -test.skip pattern), each with why.
# Two kinds of reason:
#  [wine]  Wine lacks what the test checks: no symlink or junction that
#          Lstat sees (os.Symlink "succeeds" and leaves a plain file or
#          nothing), no stored ACLs (a DACL reads back as Wine's default).
#  [unix]  the test asserts Unix behaviour and has no Windows guard, so it
#          is not platform-independent and would fail on Windows too:
#          POSIX mode bits (0600/0700; Windows reports 0666/0777), sh and
#          crontab, ENOENT's "no such file" text, "/a/b" as an absolute path.
declare -A skip=(
  # [wine] ACL: TestStateFileACL. [wine] links: TestWritersRefuseSymlinks,
  # TestJunctionRefused, TestReadRefusesWhatIsNotARegularFile (its symlink
  # subtest; -test.skip cannot drop one subtest and keep the test's others).
  # [unix] modes: TestModes, TestOpenLogAndCreateNew (also a symlink).
  [./internal/atomicfile]='^(TestStateFileACL|TestWritersRefuseSymlinks|TestJunctionRefused|TestReadRefusesWhatIsNotARegularFile|TestModes|TestOpenLogAndCreateNew)$'
  # [unix] modes: TestJournalRoundTrip. [wine] links: TestOpenRefusesSymlink.
  [./journal]='^(TestJournalRoundTrip|TestOpenRefusesSymlink)$'
  # [unix] modes: TestConcurrentProcessesLoseNothing (cache mode 0600).
  # [wine] links: TestSymlinkedCacheIsRefused, TestLocksRefuseSymlinks.
  [./healthcheck]='^(TestConcurrentProcessesLoseNothing|TestSymlinkedCacheIsRefused|TestLocksRefuseSymlinks)$'
  # [unix] cron (sh -n, crontab), launchd/systemd file modes, ENOENT text,
  # a Unix PATH in the entry: every schtasks and Windows-path test runs.
  [./install]='^(TestCronLine|TestCronApplyIdempotent|TestCronListFailure|TestLaunchdPlist|TestSystemdUnits|TestSecretsNeverWritten|TestPathsRefused|TestFromLoadedBatch)$'
  # [unix] "/a/b.json" is absolute only on Unix.
  [./mcpconfig]='^TestExplicitPaths$'
  # [wine] no browser: the prefix has no Windows Chromium. The page is the
  # same on every platform; the host's go test checks it in Chromium.
  [./report]='^TestHTMLInHeadlessBrowser$'
)
# Packages where only the named tests run (-test.run), and why.
declare -A run=(
  # Every other jobs test loads a batch whose agent.command is a fake
  # `claude` shell script put on a temporary PATH ([unix]).
  [./jobs]='^(TestLoadWindowsCommands|TestLoadRefusesAnAliasBomb|TestLoadErrorsEscapeHostileNames|TestParseDotenv|FuzzLoad)$'
  # Every other doctor test runs fake `claude` shell scripts or builds
  # nwtestserver with `go` ([unix]); these are the Windows (schtasks,
  # backslash paths) and pure checks.
  [./doctor]='^(TestSchtasksTaskChecked|TestSchtasksRegisteredTask|TestHookPathWithBackslashes|TestConfigPathWithTilde|TestConfigPathMissingFile|TestConfigPathBrokenFile|TestMCPConfigArgs|TestFailOpenInLaunchdPlist|TestFailOpenElsewhere|TestShadowedServer|TestCacheUnwritable|TestNodeHookNextToNightwatch|TestMatcherMissesMCPTools|TestMatcherRule|TestEntrySecretsInAnOldPlistAndUnit|TestEntrySecretsCleanEntry|TestHooksSwitchedOffBySettings|TestClaudeConfigDirIsFollowed|TestAgentLoginFixSurvivesRedaction|TestServerEnvShowsNamesNotValues)$'
)
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./internal/clirange ./internal/environ ./internal/redact ./internal/text
  ./internal/proc ./internal/command ./internal/atomicfile ./journal ./report ./healthcheck
  ./install ./mcpconfig ./jobs ./doctor)

work=$(mktemp -d)
logs=${WINE_TEST_LOGS:-$work}
mkdir -p "$logs"
wineserver=$(dirname "$wine")/wineserver
[ -x "$wineserver" ] || wineserver=$(command -v wineserver || echo true)
trap '"$wineserver" -k >/dev/null 2>&1 || true; "$wineserver" -w >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
export WINEPREFIX="$work/prefix" WINEDEBUG=-all
# Creating the prefix is the first thing Wine does; if it cannot, say so.
# Once, on a busy CI machine, the first start failed at once with an empty
# log and the same command worked a minute later: a failed start is said,
# with its exit status, and tried once more on a fresh prefix before the
# step fails.
boot() { timeout 120 "$wine" cmd /c exit 0 >"$work/boot.log" 2>&1; }
rc=0
boot || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "wine-test: the first start of Wine failed (exit $rc); its log:" >&2
  cat "$work/boot.log" >&2
  "$wineserver" -k >/dev/null 2>&1 || true
  rm -rf "$WINEPREFIX"
  sleep 5
  rc=0
  boot || rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$work/boot.log" >&2
    fail "Wine cannot start here ($wine cmd /c exit 0, exit $rc, twice); the Windows tests did not run"
  fi
fi
"$cc" -shared -O2 -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
  scripts/wine/bcryptprimitives.c scripts/wine/bcryptprimitives.def -ladvapi32

# The overlay: one test-only file per package (see the top of this file).
overlay="$work/overlay.json"
printf '{"Replace":{' >"$overlay"
sep=
for pkg in "${pkgs[@]}"; do
  dir=$(GOOS=windows go list -f '{{.Dir}}' "$pkg")
  name=$(GOOS=windows go list -f '{{.Name}}' "$pkg")
  f="$work/$(echo "${pkg#./}" | tr / _)_wine_test.go"
  cat >"$f" <<GO
package $name

import _ "unsafe"

//go:linkname nightwatchWineDeleteatFallback internal/syscall/windows.TestDeleteatFallback
var nightwatchWineDeleteatFallback bool

func init() { nightwatchWineDeleteatFallback = true }
GO
  printf '%s"%s/zz_wine_overlay_test.go":"%s"' "$sep" "$dir" "$f" >>"$overlay"
  sep=,
done
printf '}}\n' >>"$overlay"

failed=()
for pkg in "${pkgs[@]}"; do
  exe="$work/$(echo "${pkg#./}" | tr / _).test.exe"
  GOOS=windows GOARCH=amd64 go test -c -overlay "$overlay" -ldflags=-checklinkname=0 -o "$exe" "$pkg"
  args=(-test.v -test.count=1 -test.timeout=5m)
  [ -z "${skip[$pkg]:-}" ] || args+=(-test.skip "${skip[$pkg]}")
  [ -z "${run[$pkg]:-}" ] || args+=(-test.run "${run[$pkg]}")
  log="$logs/$(basename "$exe" .exe).log"
  start=$SECONDS
  rc=0
  (cd "$pkg" && timeout 360 "$wine" "$exe" "${args[@]}") >"$log" 2>&1 || rc=$?
  # [wine] Once in CI, Wine's CreateProcess answered a test's start of a
  # child (its own test binary) with "Internal error" (Windows'
  # ERROR_INTERNAL_ERROR), and the same binary started fine before and
  # after: Wine's process creation, not our code. A package whose log shows
  # that is said, with the lines, and run once more in full; the second
  # run's verdict is the package's, so any other failure still fails.
  if [ "$rc" -ne 0 ] && grep -q 'fork/exec .*: Internal error' "$log"; then
    echo "wine-test: $pkg: Wine refused to start a process (\"Internal error\"); these lines, then the package once more:"
    grep -e '^--- FAIL' -e '^    --- FAIL' -e 'Internal error' "$log" | sed 's/^/    /' || true
    cp "$log" "$log.first"
    rc=0
    (cd "$pkg" && timeout 360 "$wine" "$exe" "${args[@]}") >"$log" 2>&1 || rc=$?
  fi
  passed=$(grep -c '^--- PASS' "$log" || true)
  skipped=$(grep -c '^--- SKIP' "$log" || true)
  # A name in run that matches no test would drop it silently: each must run.
  missing=
  if [ -n "${run[$pkg]:-}" ]; then
    for name in $(echo "${run[$pkg]}" | tr -d '^$()' | tr '|' ' '); do
      grep -q "^--- [A-Z]*: $name " "$log" || missing+=" $name"
    done
  fi
  [ -z "$missing" ] || echo "wine-test: $pkg: named tests that did not run:$missing"
  if [ "$rc" -ne 0 ] || [ -n "$missing" ] || ! grep -qx PASS "$log"; then
    grep -v -e '^=== ' -e '^--- PASS' -e '^    --- PASS' "$log" || true
    echo "FAIL $pkg under Wine (exit $rc, $((SECONDS - start))s)"
    failed+=("$pkg")
  else
    echo "ok   $pkg under Wine: $passed passed, $skipped skipped by the test, ${run[$pkg]:+only the named tests, }excluded: ${skip[$pkg]:-none} ($((SECONDS - start))s)"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  fail "under Wine: ${failed[*]}"
fi
echo "== Windows tests under Wine: all passed"
