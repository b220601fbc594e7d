#!/usr/bin/env bash
# The quickstart, with Go alone: build nightwatch and two small example MCP
# servers, start the HTTP one, then
#   1. preflight the example batch (examples/batches.yaml): validate it,
#      pre-warm and probe every server its jobs need, record the verdicts;
#   2. probe the servers of examples/mcp.json, where "calendar" is broken on
#      purpose: it needs an API key its config does not pass (the launchd trap);
#   3. with npm: a real example night (examples/demo-night.yaml) of the pinned
#      Claude Code CLI, installed from the project's lock file (npm ci in
#      testdata/npm, as the tests do), with a scripted stand-in for the
#      model (bin/nwfakeapi, the test suite's fake Messages API): an outage
#      in the middle, a deferred job, a reconnect, the morning report.
#      Without npm, the demo ends after step 2.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin .nightwatch
echo "== building nightwatch, its hook executable and the example servers into bin/ (the first build fetches modules and takes a minute or two)"
CGO_ENABLED=0 go build -o bin/ ./cmd/nightwatch ./cmd/nightwatch-hook ./examples/servers/notes ./examples/servers/search ./internal/testkit/cmd/nwfakeapi

export SEARCH_PORT="${SEARCH_PORT:-18931}" SEARCH_TOKEN="${SEARCH_TOKEN:-demo-search-token}"
./bin/search -addr "127.0.0.1:${SEARCH_PORT}" 2>.nightwatch/search.log &
search_pid=$!
echo "$search_pid" > .nightwatch/demo-search.pid
api_pid=
cleanup() {
  # Everything the demo started, the search server a reconnect restarted
  # included: a later run finds search down and starts it by its reconnect.
  kill "$search_pid" 2>/dev/null || true
  [ -s .nightwatch/search.pid ] && kill "$(cat .nightwatch/search.pid)" 2>/dev/null || true
  [ -n "$api_pid" ] && kill "$api_pid" 2>/dev/null || true
  rm -f .nightwatch/search.pid .nightwatch/demo-search.pid .nightwatch/search-down-until
}
trap cleanup EXIT
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

if ! command -v npm >/dev/null 2>&1; then
  echo "      npm is not installed, so the example night is left out."
  echo "      With Claude Code installed: ./scripts/start-search.sh && ./bin/nightwatch run examples/batches.yaml"
  exit 0
fi

# The pinned CLIs, installed from the lock file (both versions, about 650 MB, once).
# The newest pinned version, or DEMO_CLAUDE_VERSION (another pinned one: 2.1.197).
pinned=$(sed -n 's/.*"claude-code-\([0-9.]*\)".*/\1/p' testdata/npm/package.json | sort -t. -k1,1n -k2,2n -k3,3n)
version="${DEMO_CLAUDE_VERSION:-$(echo "$pinned" | tail -n 1)}"
if ! echo "$pinned" | grep -qxF "$version"; then
  echo "demo: Claude Code $version is not pinned in testdata/npm/package.json (pinned: $(echo $pinned))" >&2
  exit 2
fi
claude="$PWD/testdata/npm/node_modules/claude-code-$version/bin/claude.exe"
if [ ! -x "$claude" ]; then
  echo
  echo "== npm ci (testdata/npm: the pinned Claude Code CLIs, from package-lock.json; about 650 MB, once: a few minutes)"
  if ! (cd testdata/npm && npm ci --no-audit --no-fund); then
    echo "demo: npm ci failed (offline?), so the example night is left out; the steps above passed." >&2
    exit 0
  fi
fi

echo
echo "== an example night: Claude Code $version, the two example servers, and a STAND-IN for the model"
echo "   The model is bin/nwfakeapi, the test suite's fake Messages API: it makes exactly the"
echo "   tool calls its prompt's CALL lines name. It is not Claude and needs no API key."
url_file=.nightwatch/demo-api.url
rm -f "$url_file"
./bin/nwfakeapi -url-file "$url_file" >/dev/null 2>.nightwatch/demo-api.log &
api_pid=$!
for _ in $(seq 50); do [ -s "$url_file" ] && break; sleep 0.1; done
export DEMO_API_URL DEMO_CLAUDE="$claude" DEMO_HOME="$PWD/.nightwatch/demo-home"
DEMO_API_URL=$(cat "$url_file")
mkdir -p "$DEMO_HOME"
echo "   stand-in model at $DEMO_API_URL"
echo
echo "== nightwatch run examples/demo-night.yaml (four jobs, one at a time; about a minute)"
set +e
./bin/nightwatch run examples/demo-night.yaml --fresh --maintenance-interval 1s
code=$?
set -e
echo
if [ "$code" -ne 0 ]; then
  echo "demo: the example night did not end with every job done (exit $code); its log is under .nightwatch/demo/logs" >&2
  exit 1
fi
report=$(ls -t .nightwatch/demo/reports/*.md | head -n 1)
journal=$(ls -t .nightwatch/demo/runs/*.jsonl | head -n 1)
echo "== the morning report ($report)"
echo
cat "$report"
echo

# The demo tells only the story its own journal shows: each step of it is
# checked, and one that went otherwise is said plainly.
lines() { grep "\"type\":\"$1\"" "$journal" | grep "$2" | grep "${3:-.}" || true; }
down=$(lines server-state '"server":"search"' '"status":"unhealthy"' | head -n 1)
deferred=$(lines job-deferred '"job":"research"' | head -n 1)
back=$(lines server-state '"server":"search"' '"status":"healthy"' | tail -n 1)
story=ok
echo "== what the journal ($journal) shows"
if [ -n "$down" ]; then
  echo "   ✓ search went down in the middle of the night (the outage job's check stopped it)"
else
  echo "   ✗ search was never recorded down: the scripted outage did not happen this time"
  story=otherwise
fi
if [ -n "$deferred" ]; then
  echo "   ✓ research, which needs search, was deferred instead of failing"
else
  echo "   ✗ research was not deferred (search was up when it was due, or the outage came later)"
  story=otherwise
fi
if [ -n "$down" ] && [ -n "$back" ] && grep -q reconnect <<<"$back"; then
  echo "   ✓ search came back by its reconnect command, and research ran after it"
elif [ -n "$down" ] && [ -n "$back" ]; then
  echo "   ✓ search came back (by a probe, not by its reconnect command), and research ran after it"
else
  echo "   ✗ search was not recorded back after an outage"
  story=otherwise
fi
echo
if [ "$story" = ok ]; then
  echo "demo: the night is over, every job done, and the story above is in the morning report:"
else
  echo "demo: the night is over and every job is done, but not every step of the scripted story happened"
  echo "      (on a busy machine the outage can come before or after research is due); see the report:"
fi
echo "      $PWD/$report (and .html)"
echo "      With Claude Code and a real API key: ./scripts/start-search.sh && ./bin/nightwatch run examples/batches.yaml"
