#!/usr/bin/env bash
# The quickstart: build nightwatch and two small example MCP servers, start
# the HTTP one, and probe all servers of examples/mcp.json with a real MCP
# handshake. "calendar" is broken on purpose: it needs an API key that its
# config does not pass, the article's launchd trap.
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

cache="$PWD/.nightwatch/demo-cache.json"
set +e
./bin/nightwatch probe --config examples/mcp.json --state "$cache"
code=$?
set -e
echo
./bin/nightwatch status --config examples/mcp.json --state "$cache"
echo
if [ "$code" -eq 1 ]; then
  echo "demo: as expected, 'calendar' is down (its config lacks NOTES_API_KEY); the others are healthy."
  exit 0
fi
exit "$code"
