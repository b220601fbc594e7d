#!/usr/bin/env bash
# The quickstart, with Go alone: build nightwatch and two small example MCP
# servers, start the HTTP one, then
#   1. preflight the example batch (examples/batches.yaml): validate it,
#      pre-warm and probe every server its jobs need, record the verdicts;
#   2. probe the servers of examples/mcp.json, where "calendar" is broken on
#      purpose: it needs an API key its config does not pass (the launchd trap).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin .nightwatch
go build -o bin/ ./cmd/nightwatch ./examples/servers/notes ./examples/servers/search

export SEARCH_PORT="${SEARCH_PORT:-18931}" SEARCH_TOKEN="${SEARCH_TOKEN:-demo-search-token}"
./bin/search -addr "127.0.0.1:${SEARCH_PORT}" 2>.nightwatch/search.log &
search_pid=$!
trap 'kill "$search_pid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/${SEARCH_PORT}") 2>/dev/null && break
  sleep 0.1
done

echo "== nightwatch preflight examples/batches.yaml"
./bin/nightwatch preflight examples/batches.yaml

echo
echo "== nightwatch probe --config examples/mcp.json"
cache="$PWD/.nightwatch/demo-cache.json"
set +e
./bin/nightwatch probe --config examples/mcp.json --state "$cache"
code=$?
set -e
if [ "$code" -ne 1 ]; then
  echo "demo: expected 'calendar' to be reported down (exit 1), got exit $code" >&2
  exit 1
fi
echo
echo "demo: preflight passed; 'calendar' is down as expected (its config lacks NOTES_API_KEY)."
echo "      With Claude Code installed: ./bin/nightwatch run examples/batches.yaml"
