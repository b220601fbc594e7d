#!/usr/bin/env bash
# Runs the Windows test binaries of the packages with Windows-only code
# under Wine, as far as Wine can tell anything: Debian's Wine 8.0 lacks
# bcryptprimitives.dll, so a stand-in (scripts/wine/bcryptprimitives.c,
# built with mingw-w64) goes into a throw-away prefix. Wine is not Windows:
# it has no symlinks or junctions that Lstat sees, stores no ACLs, and
# cannot delete a file the way Go's os.Remove asks (so every t.TempDir's
# cleanup "fails"); a test whose only failure is that cleanup is counted
# as passed under Wine, and nothing here is a Windows verdict.
#
#   scripts/wine-test.sh [package…]   (default: the Windows packages)
set -euo pipefail
cd "$(dirname "$0")/.."
wine=${WINE64:-$(command -v wine64 || echo /usr/lib/wine/wine64)}
cc=${MINGW_CC:-x86_64-w64-mingw32-gcc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export WINEPREFIX="$work/prefix" WINEDEBUG=-all
"$wine" cmd /c exit 0 >/dev/null 2>&1 || true # creates the prefix
"$cc" -shared -O2 -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
  scripts/wine/bcryptprimitives.c scripts/wine/bcryptprimitives.def -ladvapi32
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./internal/command ./internal/proc ./internal/atomicfile ./install ./mcpconfig ./jobs ./doctor)
for pkg in "${pkgs[@]}"; do
  exe="$work/$(basename "$pkg").test.exe"
  GOOS=windows GOARCH=amd64 go test -c -o "$exe" "$pkg"
  echo "== $pkg under Wine"
  (cd "$pkg" && timeout 600 "$wine" "$exe" -test.v -test.count=1 -test.run "${WINE_RUN:-.}" 2>&1 || true) |
    awk '
      /^=== RUN/ { name = $3; other[name] = 0; next }
      /^--- (PASS|SKIP)/ { print; next }
      /^--- FAIL/ { n = $3; if (other[n]) print; else print "--- PASS (under Wine; only t.TempDir cleanup failed): " n; next }
      /TempDir RemoveAll cleanup/ { next }
      /^[ \t]+[A-Za-z0-9_]+\.go:[0-9]+:/ { other[name] = 1; print; next }
    '
done
