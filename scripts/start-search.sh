#!/usr/bin/env bash
# The example search server's reconnect command (examples/*.yaml): start
# bin/search in the background on SEARCH_PORT, unless something already
# listens there, and wait until it answers. nightwatch runs it when the
# server is down (a reconnect), without a shell, from examples/.
cd "$(dirname "$0")/.." || exit 1
port="${SEARCH_PORT:-18931}"
mkdir -p .nightwatch
# The demo's outage (scripts/demo-outage.sh) lasts until this time.
if [ -s .nightwatch/search-down-until ] && [ "$(date +%s)" -lt "$(cat .nightwatch/search-down-until)" ]; then
  echo "search is still down (the demo's outage lasts until $(date -d "@$(cat .nightwatch/search-down-until)" +%T 2>/dev/null || cat .nightwatch/search-down-until))" >&2
  exit 1
fi
rm -f .nightwatch/search-down-until
if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  # A session of its own (setsid): nightwatch ends the reconnect command's
  # process group when it exits, and the server must outlive it.
  detach=nohup
  command -v setsid >/dev/null 2>&1 && detach=setsid
  "$detach" ./bin/search -addr "127.0.0.1:$port" >>.nightwatch/search.log 2>&1 </dev/null &
  echo $! > .nightwatch/search.pid
fi
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && exit 0
  sleep 0.1
done
echo "search did not start on port $port" >&2
exit 1
