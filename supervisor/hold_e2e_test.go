package supervisor

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// TestNightHoldsACallWhileItsServerRestarts (issue 20): a job's HTTP
// server goes down after the first of its three calls and is restarted
// on the same port while the job's next call waits in the hook. The call
// is held, then answered by the restarted server; the job is done in one
// attempt with every call answered, the journal has one call-held line
// (server, seconds, answered) and one server-restarted line (by outside:
// its address refused connections, then answered), and the held call's
// context tells the model it is back as a new process. Before: the call was blocked and the
// job ended done with one of its three calls answered.
func TestNightHoldsACallWhileItsServerRestarts(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		f := newNightFixture(t)
		web := mcpserver.StartRestartable(t, 1)
		b := f.load(fmt.Sprintf(`version: 1
name: hold
state_dir: ./state
agent: {command: %s}
defaults: {timeout: 3m, stall_timeout: 2m, retries: 1, on_unhealthy: defer}
health: {ttl: 1ms, backoff: 2s, max_backoff: 4s, probe_timeout: 5s, prewarm_timeout: 30s, max_hold: 90s}
servers:
  web: {type: http, url: %s}
jobs:
  - {name: j1, servers: [web], allowed_tools: [mcp__web], prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(web.URL()),
			jsonString(prompt("j1", `mcp__web__echo {"message":"first"}`, `mcp__web__echo {"message":"while it restarts"}`,
				`mcp__web__echo {"message":"third"}`))))
		events := statedir.Events(b.StateDir)
		restarted := make(chan struct{})
		go func() {
			defer close(restarted)
			for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if data, _ := os.ReadFile(events); strings.Contains(string(data), `"kind":"holding"`) {
					web.Start()
					return
				}
			}
		}()
		s := f.run(b)
		<-restarted
		if !s.AllDone() || s.Done != 1 || len(s.Jobs) != 1 || s.Jobs[0].Attempts != 1 {
			t.Fatalf("want j1 done in one attempt, got %+v", s.Jobs)
		}
		got := f.api.SessionToolResults("j1")
		if len(got) != 3 {
			t.Fatalf("the model received %d results for 3 calls", len(got))
		}
		for i, want := range []string{"first", "while it restarts", "third"} {
			if got[i].IsError || !strings.Contains(got[i].Content, want) {
				t.Errorf("call %d: want %q answered, got error=%v %q", i+1, want, got[i].IsError, got[i].Content)
			}
		}
		if web.Starts() != 2 {
			t.Errorf("the server was started %d times, want 2", web.Starts())
		}
		const back = "it is back as a new process (HTTP: its address refused connections during the outage"
		if !slices.ContainsFunc(got[1].HookContext, func(c string) bool { return strings.Contains(c, back) }) {
			t.Errorf("the held call's context %q, want %q", got[1].HookContext, back)
		}
		var held, restarts []journal.Event
		for _, ev := range readJournalTypes(t, s.Journal) {
			switch ev.Type {
			case journal.ServerRestarted:
				restarts = append(restarts, ev)
			case journal.CallHeld:
				held = append(held, ev)
			case journal.CallBlocked:
				t.Errorf("a call was blocked: %+v", ev)
			}
		}
		if len(held) != 1 || held[0].Server != "web" || held[0].Outcome != journal.HeldAnswered || held[0].Seconds <= 0 ||
			held[0].Tool != "mcp__web__echo" {
			t.Errorf("call-held lines: %+v", held)
		}
		if len(restarts) != 1 || restarts[0].Server != "web" || restarts[0].Job != "j1" || restarts[0].Attempt != 1 ||
			restarts[0].By != journal.RestartedOutside || !strings.HasPrefix(restarts[0].Reason, "HTTP: its address refused connections") {
			t.Errorf("server-restarted lines: %+v, want one for web in j1's attempt 1, by outside, saying HTTP and how", restarts)
		}
	})
}
