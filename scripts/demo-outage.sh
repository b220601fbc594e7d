#!/bin/sh
# The demo night's scripted outage (examples/demo-night.yaml): stop the
# example search server in the middle of the night, as a crash would.
cd "$(dirname "$0")/.." || exit 1
for f in .nightwatch/search.pid .nightwatch/demo-search.pid; do
  [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null
done
# It stays down for a while: until then its reconnect command fails, as a
# server that takes its time to come back does.
echo $(( $(date +%s) + ${DEMO_OUTAGE_SECONDS:-12} )) > .nightwatch/search-down-until
echo "demo: the search server was stopped (an outage in the middle of the night)"
exit 0
