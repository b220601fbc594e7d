package hook_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/hook"
	"github.com/nightwatch-dev/nightwatch/internal/clirange"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
)

// These tests run every supported Claude Code CLI (testkit.ForEachClaude)
// against a fake Messages API and real MCP servers, with nightwatch
// registered as its hook the way a user (or the supervisor) registers it:
// an absolute path in a settings file.

const (
	// Seeded secrets: none of them may reach the model, the cache or the
	// events file.
	stdioSecret = "sk-nightwatch-e2e-stdio-0123456789abcdef"
	httpSecret  = "nw-e2e-bearer-token-9876543210fedcba"
	backoff     = 2 * time.Second
)

type night struct {
	t        *testing.T
	version  string
	api      *fakeapi.Server
	home     string
	dir      string
	state    string
	events   string
	mcp      string
	settings string
	env      []string
}

// newNight writes the session's MCP config and registers the hook. With
// hookSeesConfig the hook reads the same file (--config); without it the
// servers exist only in the session's --mcp-config, as in a plain
// `claude -p --mcp-config FILE` run, and the hook has no definition.
//
// The hook holds a call to a server that is down but may be back soon for
// 3 s here (the default is 2 m); hookArgs are more flags, which override.
func newNight(t *testing.T, version string, servers map[string]any, hookSeesConfig bool, hookArgs ...string) *night {
	n := &night{t: t, version: version, api: fakeapi.Start(t), home: t.TempDir(), dir: t.TempDir()}
	state := t.TempDir()
	n.state = filepath.Join(state, "mcp-health-cache.json")
	n.events = filepath.Join(state, "events.jsonl")
	n.mcp = testkit.WriteMCPConfig(t, servers)
	// The dedicated hook executable, as the night injects it.
	args := []string{testkit.BuildHook(t), "--state", n.state, "--events", n.events,
		"--backoff", backoff.String(), "--probe-timeout", "5s", "--max-hold", "3s"}
	if hookSeesConfig {
		args = append(args, "--config", n.mcp)
	}
	args = append(args, hookArgs...)
	entry := []any{map[string]any{"matcher": "mcp__.*",
		"hooks": []any{map[string]any{"type": "command", "command": strings.Join(args, " "), "timeout": 400}}}}
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
		Version: n.version, Prompt: prompt, Dir: n.dir, Home: n.home, MCPConfig: n.mcp, Settings: n.settings,
		AllowedTools: []string{"mcp__notes", "mcp__web", "mcp__up"}, Env: n.env,
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

// endBackoff makes server's retry due now, as the end of its backoff
// would: the one clock the hook reads for it is the entry's next retry.
// Waiting the backoff out instead made every "the next call comes within
// the backoff" check a race with the machine's load.
func (n *night) endBackoff(server string) {
	n.t.Helper()
	err := (&healthcheck.Store{Path: n.state}).Update(func(f *healthcheck.File) error {
		e := f.Servers[server]
		if e == nil {
			return fmt.Errorf("no entry for %s", server)
		}
		e.NextRetryAt = healthcheck.MillisOf(time.Now()) - 1
		return nil
	})
	if err != nil {
		n.t.Fatal(err)
	}
}

// status runs `nightwatch status` on the night's cache from the
// session's folder, with the session's home.
func (n *night) status() string {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testkit.BuildNightwatch(n.t), "status", "--state", n.state)
	cmd.Dir, cmd.Env = n.dir, []string{"HOME=" + n.home, "PATH=" + os.Getenv("PATH")}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	proc.Prepare(cmd, time.Second)
	if err := proc.Start(cmd); err != nil {
		n.t.Fatal(err)
	}
	if err := proc.Wait(cmd); err != nil {
		n.t.Errorf("nightwatch status: %v\n%s", err, out.String())
	}
	return out.String()
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

func (n *night) eventsHave(wants ...string) {
	n.t.Helper()
	events, _ := os.ReadFile(n.events)
	for _, want := range wants {
		if !bytes.Contains(events, []byte(want)) {
			n.t.Errorf("events file lacks %s:\n%s", want, events)
		}
	}
}

func wantOK(t *testing.T, r fakeapi.ToolResult, text string) {
	t.Helper()
	if r.IsError || !strings.Contains(r.Content, text) {
		t.Errorf("%s: want a result with %q, got error=%v %q", r.ToolName, text, r.IsError, r.Content)
	}
}

func wantFailed(t *testing.T, r fakeapi.ToolResult, text string) {
	t.Helper()
	if !r.IsError || !strings.Contains(r.Content, text) {
		t.Errorf("%s: want the server's failure %q, got error=%v %q", r.ToolName, text, r.IsError, r.Content)
	}
}

var waitWords = regexp.MustCompile(`\d+s from now|under a second from now`)

// heldWords are what HeldMessage adds to BlockMessage: how long the call
// waited for its server.
var heldWords = regexp.MustCompile(`, did not come back while this call waited (?:[\dhms.]+|under a second) for it`)

// wantBlocked asserts the exact words the model received for a blocked
// call: nightwatch's block message for the server's entry, bare on
// 2.1.197, after "PreToolUse:<tool> hook error: " on 2.1.332 (reference
// 2.1.332 §3). Only the "Ns from now" countdown may differ.
func (n *night) wantBlocked(r fakeapi.ToolResult, server, condition string) {
	n.t.Helper()
	e := n.entry(server)
	if e == nil {
		n.t.Fatalf("%s blocked without an entry", server)
	}
	// The call was blocked at some moment between the entry's last check
	// and now: the message said "until …, Ns from now" if its backoff was
	// still running then, "for now" if not. On a busy machine the backoff
	// may have run out since, so either moment's words are the model's.
	got := waitWords.ReplaceAllString(heldWords.ReplaceAllString(r.Content, ""), "Ns from now")
	var want string
	matched := false
	for _, at := range []time.Time{e.CheckedAt.Time(), time.Now()} {
		want = hook.BlockMessage(server, e, at)
		if clirange.Compare(n.version, "2.1.332") >= 0 {
			want = "PreToolUse:" + r.ToolName + " hook error: " + want
		}
		matched = matched || got == waitWords.ReplaceAllString(want, "Ns from now")
	}
	if !r.IsError || !matched {
		n.t.Errorf("%s: the model read\n  %q\nwant\n  %q", r.ToolName, r.Content, want)
	}
	if !strings.Contains(r.Content, `MCP server "`+server+`" is `+condition) {
		n.t.Errorf("%s: the message does not say %s is %s: %q", r.ToolName, server, condition, r.Content)
	}
	n.t.Logf("claude %s: the model read: %s", n.version, r.Content)
}

func TestClaudeStdioServerDiesThenComesBack(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		n := newNight(t, version, map[string]any{"notes": map[string]any{
			"command": testkit.BuildTestServer(t),
			"args":    []string{"--mode", "require-env=NOTES_API_KEY"},
			"env":     map[string]string{"NOTES_API_KEY": stdioSecret},
			// The next call must come inside the crash's backoff to be held
			// (2 s was not always enough on a busy machine), and the retry
			// must be due within the hold for a hold to wait for it.
		}}, true, "--backoff", "8s", "--max-hold", "15s")

		got := n.session("stdio-1",
			`mcp__notes__echo {"message":"first"}`,
			`mcp__notes__die {}`,
			`mcp__notes__echo {"message":"after the crash"}`)
		wantOK(t, got[0], "first")
		// 2.1.197: "MCP error -32000: Connection closed"; 2.1.332: "Connection closed".
		wantFailed(t, got[1], "Connection closed")
		// PostToolUseFailure recorded the crash and told the model the
		// next call waits; that call is held until a fresh start of the
		// server passes a probe, then the CLI starts it again and it
		// answers (before issue 20 it was blocked).
		if !hasContext(got[1], "PostToolUseFailure", `MCP server "notes" went down during this call`) {
			t.Errorf("the model was not told the next call waits: %q", got[1].HookContext)
		}
		wantOK(t, got[2], "after the crash")
		if !hasContext(got[2], "PreToolUse", `MCP server "notes" was down; this call waited`) {
			t.Errorf("the model was not told the server came back: %q", got[2].HookContext)
		}
		if e := n.entry("notes"); e == nil || e.Status != healthcheck.StatusHealthy || e.LastRestoredAt == 0 {
			t.Errorf("cache after recovery: %+v", e)
		}
		n.eventsHave(`"kind":"holding"`, `"kind":"held"`, `"outcome":"answered"`, `"to":"unhealthy"`, `"to":"healthy"`)
		n.noSecretsWritten(got)
	})
}

// TestClaudeHTTPServerUnavailable: a Streamable HTTP server starts
// answering 503 mid-session. Claude Code's error text hides the status, so
// the hook probes to learn it, marks the server unavailable, and blocks
// the next call; once the server is back and the backoff has passed,
// calls run again.
func TestClaudeHTTPServerUnavailable(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
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
		n := newNight(t, version, map[string]any{"web": map[string]any{
			"type": "http", "url": srv.URL + mcpserver.StreamablePath,
			"headers": map[string]string{"Authorization": "Bearer ${WEB_TOKEN}"},
		}}, true)
		n.env = []string{"WEB_TOKEN=" + httpSecret} // claude's, and so the hook's

		got := n.session("http-1",
			`mcp__web__echo {"message":"first"}`,
			`mcp__web__echo {"message":"hits the 503"}`,
			`mcp__web__echo {"message":"would hit it again"}`)
		wantOK(t, got[0], "first")
		// 2.1.197 prefixes "Streamable HTTP error: "; 2.1.332 does not.
		wantFailed(t, got[1], "Error POSTing to endpoint")
		n.wantBlocked(got[2], "web", "unavailable")
		e := n.entry("web")
		if e == nil || e.LastFailureCode != healthcheck.CodeUnavailable || e.ArticleCode() != healthcheck.Article503 ||
			!strings.Contains(e.LastError, "503") {
			t.Fatalf("cache: %+v", e)
		}

		down.Store(false)
		n.endBackoff("web")
		again := n.session("http-2", `mcp__web__echo {"message":"back"}`)
		wantOK(t, again[0], "back")
		n.noSecretsWritten(append(got, again...))
	})
}

// TestClaudeHTTPServerKilledMidNight: the process serving an HTTP server
// (nwtestserver --http, a process of its own) dies during a call. The
// client's own text (a closed socket; 2.1.332 adds an errno prefix) opens
// the server at once, and the next call is blocked instead of meeting a
// refused connection.
func TestClaudeHTTPServerKilledMidNight(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		url := startHTTPServerProcess(t)
		n := newNight(t, version, map[string]any{"web": map[string]any{"type": "http", "url": url}}, true)
		got := n.session("killed",
			`mcp__web__echo {"message":"first"}`,
			`mcp__web__die {}`,
			`mcp__web__echo {"message":"after the kill"}`)
		wantOK(t, got[0], "first")
		if !got[1].IsError {
			t.Errorf("die: want the client's transport error, got %q", got[1].Content)
		}
		n.wantBlocked(got[2], "web", "unreachable")
		if e := n.entry("web"); e.LastFailureCode != healthcheck.CodeTransport || e.ArticleCode() != healthcheck.ArticleTransport {
			t.Errorf("cache: %+v", e)
		}
	})
}

// startHTTPServerProcess runs the test MCP server over Streamable HTTP as
// a process of its own (its die tool ends that process) and returns its URL.
func startHTTPServerProcess(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, testkit.BuildTestServer(t), "--http", "127.0.0.1:0")
	proc.Prepare(cmd, 200*time.Millisecond)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = proc.Wait(cmd)
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("test server printed no URL: %v", err)
	}
	return strings.TrimSpace(line)
}

// upstreamNight serves a go-sdk server whose handshake always works and
// whose upstream the test takes down and brings back.
func upstreamNight(t *testing.T, version string, hookSeesConfig bool) (*night, *mcpserver.Upstream) {
	up := &mcpserver.Upstream{}
	srv := httptest.NewServer(mcpserver.NewUpstreamHandler(up))
	t.Cleanup(srv.Close)
	// A backoff no session outlives: the call after the third failure
	// meets the open server however long the model's turn takes, and a
	// test that wants the trial ends the backoff (endBackoff).
	n := newNight(t, version, map[string]any{"up": map[string]any{
		"type": "http", "url": srv.URL + mcpserver.StreamablePath,
	}}, hookSeesConfig, "--backoff", "10m")
	return n, up
}

// TestClaudeUpstreamFailuresOpenAfterThree: three consecutive upstream
// 503s, as an isError result and as a JSON-RPC error (the bare message on
// 2.1.332, "MCP error 0: …" on 2.1.197), block the fourth call, although
// the server's handshake works all along. After the backoff one trial
// call goes through; the upstream is back, so it clears the server.
// Without a definition the hook can read (the server only in the
// session's --mcp-config) the same holds: passive health.
func TestClaudeUpstreamFailuresOpenAfterThree(t *testing.T) {
	for _, tc := range []struct {
		name           string
		hookSeesConfig bool
	}{{"with-definition", true}, {"mcp-config-only", false}} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.ForEachClaude(t, func(t *testing.T, version string) {
				n, up := upstreamNight(t, version, tc.hookSeesConfig)
				up.SetDown(true)
				got := n.session("upstream-down",
					`mcp__up__fetch {"message":"one"}`,
					`mcp__up__query {}`,
					`mcp__up__fetch {"message":"three"}`,
					`mcp__up__fetch {"message":"four"}`)
				for _, r := range got[:3] {
					wantFailed(t, r, mcpserver.UpstreamFailure)
				}
				n.wantBlocked(got[3], "up", "unavailable")
				e := n.entry("up")
				if e.Witness != healthcheck.WitnessCalls || e.ArticleCode() != healthcheck.Article503 {
					t.Fatalf("cache after three upstream failures: %+v", e)
				}
				if !tc.hookSeesConfig {
					// nightwatch status, from the same folder, names it.
					if out := n.status(); !strings.Contains(out, "passive only (no definition found)") {
						t.Errorf("status does not say the server has passive health only:\n%s", out)
					}
				}

				up.SetDown(false)
				n.endBackoff("up")
				again := n.session("upstream-back",
					`mcp__up__fetch {"message":"trial"}`,
					`mcp__up__query {}`)
				wantOK(t, again[0], "trial")
				wantOK(t, again[1], "query ok")
				if e := n.entry("up"); e.Status != healthcheck.StatusHealthy || e.RestoredBy != healthcheck.RestoredByPassive {
					t.Errorf("cache after the trial: %+v", e)
				}
				n.eventsHave(`"kind":"trial"`, `"by":"call-failures"`, `"to":"healthy"`)
			})
		})
	}
}

// TestClaudeToolErrorsNeverBlock: four ENOENT errors of a tool are the
// tool's own; the server stays callable.
func TestClaudeToolErrorsNeverBlock(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		n, _ := upstreamNight(t, version, true)
		enoent := `mcp__up__fail {"text":"ENOENT: no such file or directory, open '/srv/notes/x.md'"}`
		got := n.session("enoent", enoent, enoent, enoent, enoent, `mcp__up__fetch {"message":"still here"}`)
		for _, r := range got[:4] {
			wantFailed(t, r, "ENOENT")
		}
		wantOK(t, got[4], "still here")
		if e := n.entry("up"); e == nil || e.Status != healthcheck.StatusHealthy || e.ConsecutiveFailures != 0 {
			t.Errorf("cache: %+v", e)
		}
	})
}
