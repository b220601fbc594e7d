package hook_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
)

// These tests are "hold, don't deny" (issue 20) on every supported CLI: a
// call to an HTTP MCP server that is down but comes back within the hold
// waits in PreToolUse and is answered; a server that does not come back is
// denied after the hold, saying so; a rate-limited or auth-refused one is
// denied at once.

// events reads the night's events file.
func (n *night) eventLines() []healthcheck.Event {
	n.t.Helper()
	f, err := os.Open(n.events)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []healthcheck.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev healthcheck.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			out = append(out, ev)
		}
	}
	return out
}

func (n *night) eventsOf(kind string) []healthcheck.Event {
	var out []healthcheck.Event
	for _, ev := range n.eventLines() {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// whenHolding calls then once a hook has started holding a call to server,
// in a goroutine that ends with the test.
func (n *night) whenHolding(server string, then func()) (done <-chan struct{}) {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			for _, ev := range n.eventsOf(healthcheck.EventHolding) {
				if ev.Server == server {
					then()
					return
				}
			}
		}
	}()
	return ch
}

func hasContext(r fakeapi.ToolResult, event, text string) bool {
	for _, c := range r.HookContext {
		if strings.HasPrefix(c, event+":") && strings.Contains(c, text) {
			return true
		}
	}
	return false
}

// wantBackAsNew: the held call's context says the HTTP server is back as
// a new process, seen by seenBy, and the events file has one
// server-restarted of it, by the hook's probe.
func wantBackAsNew(t *testing.T, n *night, r fakeapi.ToolResult, seenBy string) {
	t.Helper()
	want := "it is back as a new process (HTTP: its address refused connections during the outage (" + seenBy + ")"
	if !hasContext(r, "PreToolUse", want) || !hasContext(r, "PreToolUse", "Ids, handles and sessions it returned before are gone") {
		t.Errorf("the held call's context %q, want %q and that ids are gone", r.HookContext, want)
	}
	ev := n.eventsOf(healthcheck.EventServerRestarted)
	if len(ev) != 1 || ev[0].Server != "web" || ev[0].By != healthcheck.ByProbe || ev[0].Since.IsZero() ||
		!strings.Contains(ev[0].Reason, seenBy) {
		t.Errorf("server-restarted events: %+v", ev)
	}
}

// logRequests logs what the CLI sent the restarted server: which start
// answered, with which MCP session id, and the HTTP status.
func logRequests(t *testing.T, srv *mcpserver.Restartable) {
	t.Helper()
	for _, r := range srv.Requests() {
		sid := r.Session
		if len(sid) > 8 {
			sid = sid[:8]
		}
		t.Logf("start %d: %-28q session %-10q -> %d", r.Start, r.Method, sid, r.Status)
	}
}

// TestClaudeHoldHTTPServerRestarted: the HTTP server goes down after the
// first of three calls and is restarted on the same port while the second
// call waits: the second call is held (not sent, not denied), then
// answered by the new server; all three are answered in one session, and
// the model is told the server came back. The hook probes before every
// call here (a short TTL), so it meets the server down before the call
// is sent.
func TestClaudeHoldHTTPServerRestarted(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		srv := mcpserver.StartRestartable(t, 1)
		n := newNight(t, version, map[string]any{"web": map[string]any{"type": "http", "url": srv.URL()}}, true,
			"--ttl", "1ms", "--max-hold", "4m")
		restarted := n.whenHolding("web", srv.Start)
		got := n.session("held",
			`mcp__web__echo {"message":"first"}`,
			`mcp__web__echo {"message":"while it restarts"}`,
			`mcp__web__echo {"message":"third"}`)
		<-restarted
		wantOK(t, got[0], "first")
		wantOK(t, got[1], "while it restarts")
		wantOK(t, got[2], "third")
		if !hasContext(got[1], "PreToolUse", `MCP server "web" was down; this call waited`) {
			t.Errorf("the model was not told the server came back: %q", got[1].HookContext)
		}
		wantBackAsNew(t, n, got[1], "seen by a probe")
		logRequests(t, srv)
		if starts := srv.Starts(); starts != 2 {
			t.Errorf("the server was started %d times, want 2 (the held call reached the restarted one)", starts)
		}
		held := n.eventsOf(healthcheck.EventHeld)
		if len(held) != 1 || held[0].Server != "web" || held[0].Outcome != healthcheck.HoldAnswered || held[0].HeldSeconds <= 0 {
			t.Errorf("held events: %+v", held)
		}
		if b := n.eventsOf(healthcheck.EventBlocked); len(b) != 0 {
			t.Errorf("a call was blocked: %+v", b)
		}
		if e := n.entry("web"); e == nil || e.Status != healthcheck.StatusHealthy {
			t.Errorf("cache after the hold: %+v", e)
		}
	})
}

// TestClaudeHoldAfterFirstConnectionFailure: with the default TTL the call
// made just after the server went down is sent and fails (ECONNREFUSED on
// 2.1.332, "Unable to connect" on 2.1.197). That first failure marks the
// server down, so the next call is held, not sent (three sends in a row
// make 2.1.332 close the transport), and the model is told in the failed
// call's result that the next call will wait; the held call is answered
// once the server is back.
func TestClaudeHoldAfterFirstConnectionFailure(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		srv := mcpserver.StartRestartable(t, 1)
		n := newNight(t, version, map[string]any{"web": map[string]any{"type": "http", "url": srv.URL()}}, true,
			"--max-hold", "4m")
		restarted := n.whenHolding("web", srv.Start)
		got := n.session("first-failure",
			`mcp__web__echo {"message":"first"}`,
			`mcp__web__echo {"message":"meets it down"}`,
			`mcp__web__echo {"message":"held"}`)
		<-restarted
		wantOK(t, got[0], "first")
		if !got[1].IsError {
			t.Errorf("the call made while the server was down: want the client's connection error, got %q", got[1].Content)
		}
		if !hasContext(got[1], "PostToolUseFailure", `MCP server "web" went down during this call`) ||
			!hasContext(got[1], "PostToolUseFailure", "will wait for it, up to 4m0s") {
			t.Errorf("the model was not told the next call waits: context %q", got[1].HookContext)
		}
		wantOK(t, got[2], "held")
		if !hasContext(got[2], "PreToolUse", `MCP server "web" was down; this call waited`) {
			t.Errorf("the model was not told the server came back: %q", got[2].HookContext)
		}
		wantBackAsNew(t, n, got[2], "seen by Claude Code's call")
		logRequests(t, srv)
		held := n.eventsOf(healthcheck.EventHeld)
		if len(held) != 1 || held[0].Outcome != healthcheck.HoldAnswered {
			t.Errorf("held events: %+v", held)
		}
	})
}

// TestClaudeHoldGivesUp: a server that does not come back within the hold:
// the call waits the hold out and is denied, the reason saying how long it
// waited; the next call is denied at once (one hold per outage).
func TestClaudeHoldGivesUp(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		srv := mcpserver.StartRestartable(t, 1)
		n := newNight(t, version, map[string]any{"web": map[string]any{"type": "http", "url": srv.URL()}}, true,
			"--ttl", "1ms", "--max-hold", "3s")
		got := n.session("gives-up",
			`mcp__web__echo {"message":"first"}`,
			`mcp__web__echo {"message":"never comes back"}`,
			`mcp__web__echo {"message":"denied at once"}`)
		wantOK(t, got[0], "first")
		n.wantBlocked(got[1], "web", "unreachable")
		if !heldWords.MatchString(got[1].Content) {
			t.Errorf("the denial does not say how long the call waited: %q", got[1].Content)
		}
		n.wantBlocked(got[2], "web", "unreachable")
		if heldWords.MatchString(got[2].Content) {
			t.Errorf("the second call was held again: %q", got[2].Content)
		}
		held := n.eventsOf(healthcheck.EventHeld)
		if len(held) != 1 || held[0].Outcome != healthcheck.HoldGaveUp || held[0].HeldSeconds < 3 {
			t.Errorf("held events: %+v", held)
		}
	})
}

// TestClaudeNoHoldForRateLimitOrAuth: a server down for a rate limit or a
// refused login, a verdict another session left in the cache (down for ten
// minutes: a session on a loaded machine was seen to take more than one),
// is blocked: the call is denied at once, since no hold can fix
// either, and the model is told until when. (This is also what was
// TestClaudeCachedUnhealthyServerIsBlocked, the same session with a 3 s
// hold: under a 4 m hold a held call would be seen.)
func TestClaudeNoHoldForRateLimitOrAuth(t *testing.T) {
	for _, tc := range []struct {
		code      healthcheck.FailureCode
		condition string
		failures  int
		lastError string
	}{
		{healthcheck.CodeRateLimited, "rate limited", 3, "HTTP 429 Too Many Requests"},
		{healthcheck.CodeAuth, "failing authentication", 1, "refused by the server"},
	} {
		t.Run(string(tc.code), func(t *testing.T) {
			testkit.ForEachClaude(t, func(t *testing.T, version string) {
				n := newNight(t, version, map[string]any{"notes": map[string]any{"command": testkit.BuildTestServer(t)}}, true,
					"--max-hold", "4m")
				until := time.Now().Add(10 * time.Minute)
				err := (&healthcheck.Store{Path: n.state}).Update(func(f *healthcheck.File) error {
					f.Servers["notes"] = &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, FailureCount: tc.failures,
						LastFailureCode: tc.code, LastError: tc.lastError,
						NextRetryAt: healthcheck.MillisOf(until), CheckedAt: healthcheck.MillisOf(time.Now())}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				got := n.session("no-hold", `mcp__notes__echo {"message":"x"}`)
				n.wantBlocked(got[0], "notes", tc.condition)
				if !strings.Contains(got[0].Content, until.UTC().Format("2006-01-02T15:04")) {
					t.Errorf("the message does not say until when: %q", got[0].Content)
				}
				if h := n.eventsOf(healthcheck.EventHolding); len(h) != 0 {
					t.Errorf("a %s server was held: %+v", tc.code, h)
				}
			})
		})
	}
}
