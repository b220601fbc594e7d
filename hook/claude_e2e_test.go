package hook_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
)

// These tests run the real Claude Code CLI against a fake Messages API and
// real MCP servers, with nightwatch registered as its hook the way a user
// (or the supervisor) registers it: an absolute path in a settings file.

const (
	// Seeded secrets: none of them may reach the model, the cache or the
	// events file.
	stdioSecret = "sk-nightwatch-e2e-stdio-0123456789abcdef"
	httpSecret  = "nw-e2e-bearer-token-9876543210fedcba"
	backoff     = 2 * time.Second
)

type night struct {
	t        *testing.T
	api      *fakeapi.Server
	home     string
	dir      string
	state    string
	events   string
	mcp      string
	settings string
	env      []string
}

func newNight(t *testing.T, servers map[string]any) *night {
	n := &night{t: t, api: fakeapi.Start(t), home: t.TempDir(), dir: t.TempDir()}
	state := t.TempDir()
	n.state = filepath.Join(state, "mcp-health-cache.json")
	n.events = filepath.Join(state, "events.jsonl")
	n.mcp = testkit.WriteMCPConfig(t, servers)
	bin := testkit.BuildNightwatch(t)
	command := strings.Join([]string{bin, "hook", "--state", n.state, "--events", n.events,
		"--config", n.mcp, "--backoff", backoff.String(), "--probe-timeout", "5s"}, " ")
	entry := []any{map[string]any{"matcher": "mcp__.*",
		"hooks": []any{map[string]any{"type": "command", "command": command, "timeout": 60}}}}
	n.settings = testkit.WriteSettings(t, map[string]any{
		"disableAllHooks": false,
		"hooks":           map[string]any{"PreToolUse": entry, "PostToolUse": entry, "PostToolUseFailure": entry},
	})
	return n
}

// session runs one claude -p whose fake model makes the given calls in order.
func (n *night) session(name string, calls ...string) []fakeapi.ToolResult {
	n.t.Helper()
	prompt := "SESSION " + name + "\n"
	for _, c := range calls {
		prompt += "CALL " + c + "\n"
	}
	r := testkit.RunClaude(n.t, n.api, testkit.ClaudeRun{
		Prompt: prompt, Dir: n.dir, Home: n.home, MCPConfig: n.mcp, Settings: n.settings,
		AllowedTools: []string{"mcp__notes", "mcp__web"}, Env: n.env,
	})
	r.RequireSuccess(n.t)
	got := n.api.SessionToolResults(name)
	if len(got) != len(calls) {
		n.t.Fatalf("session %s: the model received %d tool results for %d calls:\n%s", name, len(got), len(calls), r.Dump())
	}
	return got
}

func (n *night) entry(server string) *healthcheck.Entry {
	n.t.Helper()
	f, err := (&healthcheck.Store{Path: n.state}).Read()
	if err != nil {
		n.t.Fatal(err)
	}
	return f.Entry(server)
}

func (n *night) noSecretsWritten(results []fakeapi.ToolResult) {
	n.t.Helper()
	for _, p := range []string{n.state, n.events} {
		b, _ := os.ReadFile(p)
		for _, s := range []string{stdioSecret, httpSecret} {
			if bytes.Contains(b, []byte(s)) {
				n.t.Errorf("%s contains a secret", p)
			}
		}
	}
	for _, r := range results {
		for _, s := range []string{stdioSecret, httpSecret} {
			if strings.Contains(r.Content, s) {
				n.t.Errorf("the model received a secret in %s: %s", r.ToolName, r.Content)
			}
		}
	}
}

func wantOK(t *testing.T, r fakeapi.ToolResult, text string) {
	t.Helper()
	if r.IsError || !strings.Contains(r.Content, text) {
		t.Errorf("%s: want a result with %q, got error=%v %q", r.ToolName, text, r.IsError, r.Content)
	}
}

func wantBlocked(t *testing.T, r fakeapi.ToolResult, server, condition string) {
	t.Helper()
	prefix := `nightwatch: MCP server "` + server + `" is ` + condition
	if !r.IsError || !strings.HasPrefix(r.Content, prefix) || !strings.Contains(r.Content, "other tools") {
		t.Errorf("%s: want nightwatch's block message %q…, got error=%v %q", r.ToolName, prefix, r.IsError, r.Content)
	}
	t.Logf("the model read: %s", r.Content)
	if strings.Contains(r.Content, "hook error") {
		t.Errorf("the model read Claude Code's hook-error wrapper, not nightwatch's words: %q", r.Content)
	}
}

func TestClaudeStdioServerDiesThenComesBack(t *testing.T) {
	n := newNight(t, map[string]any{"notes": map[string]any{
		"command": testkit.BuildTestServer(t),
		"args":    []string{"--mode", "require-env=NOTES_API_KEY"},
		"env":     map[string]string{"NOTES_API_KEY": stdioSecret},
	}})

	got := n.session("stdio-1",
		`mcp__notes__echo {"message":"first"}`,
		`mcp__notes__die {}`,
		`mcp__notes__echo {"message":"after the crash"}`)
	wantOK(t, got[0], "first")
	if !got[1].IsError || !strings.Contains(got[1].Content, "Connection closed") {
		t.Errorf("die: want the client's crash error, got %q", got[1].Content)
	}
	// PostToolUseFailure recorded the crash, so the next call is blocked
	// instead of reaching a dead server.
	wantBlocked(t, got[2], "notes", "unreachable")
	e := n.entry("notes")
	if e == nil || e.Status != healthcheck.StatusUnhealthy || e.LastFailureCode != healthcheck.CodeTransport {
		t.Fatalf("cache after the crash: %+v", e)
	}

	// After the backoff the next call probes, finds the server answering
	// its handshake again, and goes through.
	time.Sleep(time.Until(e.NextRetryAt.Time()) + 100*time.Millisecond)
	again := n.session("stdio-2", `mcp__notes__echo {"message":"back again"}`)
	wantOK(t, again[0], "back again")
	if e := n.entry("notes"); e.Status != healthcheck.StatusHealthy || e.LastRestoredAt == 0 {
		t.Errorf("cache after recovery: %+v", e)
	}
	events, _ := os.ReadFile(n.events)
	for _, want := range []string{`"kind":"blocked"`, `"to":"unhealthy"`, `"to":"healthy"`} {
		if !bytes.Contains(events, []byte(want)) {
			t.Errorf("events file lacks %s:\n%s", want, events)
		}
	}
	n.noSecretsWritten(append(got, again...))
}

func TestClaudeCachedUnhealthyServerIsBlocked(t *testing.T) {
	n := newNight(t, map[string]any{"notes": map[string]any{"command": testkit.BuildTestServer(t)}})
	// A verdict another session left in the cache: down for a minute.
	until := time.Now().Add(time.Minute)
	err := (&healthcheck.Store{Path: n.state}).Update(func(f *healthcheck.File) error {
		f.Servers["notes"] = &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, FailureCount: 3,
			LastFailureCode: healthcheck.CodeRateLimited, LastError: "HTTP 429 Too Many Requests",
			NextRetryAt: healthcheck.MillisOf(until), CheckedAt: healthcheck.MillisOf(time.Now())}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := n.session("cached", `mcp__notes__echo {"message":"x"}`)
	wantBlocked(t, got[0], "notes", "rate limited")
	if !strings.Contains(got[0].Content, until.UTC().Format("2006-01-02T15:04")) {
		t.Errorf("the message does not say until when: %q", got[0].Content)
	}
}

// TestClaudeHTTPServerUnavailable: a Streamable HTTP server starts
// answering 503 mid-session. Claude Code's error text hides the status, so
// the hook probes to learn it, marks the server unavailable, and blocks
// the next call; once the server is back and the backoff has passed,
// calls run again.
func TestClaudeHTTPServerUnavailable(t *testing.T) {
	var down atomic.Bool
	var calls atomic.Int32
	mcpHandler := mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+httpSecret {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct{ Method string }
		_ = json.Unmarshal(body, &msg)
		// The second tool call finds the server's backend gone: a 503
		// from here on, as a load balancer sends it (empty body).
		if msg.Method == "tools/call" && calls.Add(1) == 2 {
			down.Store(true)
		}
		if down.Load() && r.Method == http.MethodPost {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	n := newNight(t, map[string]any{"web": map[string]any{
		"type": "http", "url": srv.URL + mcpserver.StreamablePath,
		"headers": map[string]string{"Authorization": "Bearer ${WEB_TOKEN}"},
	}})
	n.env = []string{"WEB_TOKEN=" + httpSecret} // claude's, and so the hook's

	got := n.session("http-1",
		`mcp__web__echo {"message":"first"}`,
		`mcp__web__echo {"message":"hits the 503"}`,
		`mcp__web__echo {"message":"would hit it again"}`)
	wantOK(t, got[0], "first")
	if !got[1].IsError || !strings.HasPrefix(got[1].Content, "Streamable HTTP error") {
		t.Errorf("want the client's HTTP error, got %q", got[1].Content)
	}
	wantBlocked(t, got[2], "web", "unavailable")
	e := n.entry("web")
	if e == nil || e.LastFailureCode != healthcheck.CodeUnavailable || !strings.Contains(e.LastError, "503") {
		t.Fatalf("cache: %+v", e)
	}

	down.Store(false)
	time.Sleep(time.Until(e.NextRetryAt.Time()) + 100*time.Millisecond)
	again := n.session("http-2", `mcp__web__echo {"message":"back"}`)
	wantOK(t, again[0], "back")
	n.noSecretsWritten(append(got, again...))
}
