package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// TestNightDeafResumeRunsFresh is issue 20's "a resume that converges" on
// every supported version. The job's first attempt records a line, then
// stalls until the stall watchdog kills it (silence, not a whole-session
// timeout, so a slow start on a busy machine cannot cut the first attempt
// short): the retry resumes its session. The
// server cannot start under a resumed session (its wrapper refuses when its
// Claude Code was started with --resume, as a server whose backend is held
// by a leftover would), although nightwatch's probe before the resume finds
// it healthy: the resumed session's init says failed, the attempt is
// stopped, and the next attempt runs a fresh session, which is done (its
// repeat of the first attempt's record is refused: no side effect twice).
func TestNightDeafResumeRunsFresh(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the test server's wrapper reads its parent's command line from /proc")
	}
	testkit.ForEachClaude(t, testNightDeafResumeRunsFresh)
}

func testNightDeafResumeRunsFresh(t *testing.T, version string) {
	f := newNightFixture(t)
	server := testkit.BuildTestServer(t)
	wrapper := filepath.Join(f.dir, "server.sh")
	body := fmt.Sprintf(`#!/bin/sh
# Claude Code starts this through nightwatch's exec-server: look at the
# parent and the grandparent for a resumed session.
for p in $PPID $(awk '{print $4}' /proc/$PPID/stat); do
  if tr '\0' ' ' < /proc/$p/cmdline | grep -q -- '--resume'; then
    echo "backend is locked by the previous attempt" >&2
    exit 1
  fi
done
exec %s "$@"
`, server)
	if err := os.WriteFile(wrapper, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	out, stalled := filepath.Join(f.dir, "out.txt"), filepath.Join(f.dir, "stalled")
	b := f.load(fmt.Sprintf(`version: 1
name: resume
state_dir: ./state
max_parallel: 1
agent: {command: %s}
defaults: {timeout: 3m, stall_timeout: 20s, retries: 2, max_defer: 2m}
health: {ttl: 10m, backoff: 1s, max_backoff: 2s, probe_timeout: 5s, prewarm_timeout: 20s}
servers:
  files: {command: %s}
jobs:
  - {name: long, servers: [files], prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(wrapper),
		jsonString(prompt("long",
			fmt.Sprintf(`mcp__files__record {"file":%s,"text":"before the stall"}`, jsonString(out)),
			fmt.Sprintf(`mcp__files__stall {"file":%s}`, jsonString(stalled))))))

	s := f.run(b)
	j := s.Jobs[0]
	if j.Status != StatusDone || j.Attempts != 3 {
		t.Errorf("long: %s after %d attempts (%s), want done on the third", j.Status, j.Attempts, j.Reason)
	}
	resumes := map[int]string{}
	var fresh bool
	for _, ev := range readJournalTypes(t, s.Journal) {
		switch {
		case ev.Type == journal.JobStarted:
			resumes[ev.Attempt] = ev.Resume
		case ev.Type == journal.JobDeferred && ev.Attempt == 2:
			fresh = ev.Bounce && ev.Fresh
		}
	}
	if resumes[2] == "" {
		t.Errorf("attempt 2 did not resume the killed session: %v", resumes)
	}
	if !fresh {
		t.Errorf("attempt 2 (resumed, its server failed at init) was not stopped and marked to run fresh")
	}
	if resumes[3] != "" {
		t.Errorf("attempt 3 resumed %q; a resume whose server was not connected must be followed by a fresh session", resumes[3])
	}
	if got, _ := os.ReadFile(out); string(got) != "before the stall\n" {
		t.Errorf("the file holds %q, want the first attempt's line once", got)
	}
}
