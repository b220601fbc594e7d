package hook_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/clirange"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

// These tests measure Claude Code's "type": "http" hooks (issue 22): the
// CLI POSTs the hook payload to a URL and reads the same JSON answer a
// command hook prints. They establish, on every pinned CLI, what a hook
// served by a long-running process (the night's supervisor) on loopback
// could rely on, and what it must guard against. No production code uses
// an http hook yet.

const (
	// nightToken is the literal header value a night would hand its
	// sessions so that its endpoint can refuse other local callers.
	nightToken   = "nw-night-token-0123456789abcdef"
	tokenHeader  = "X-Nightwatch-Token"
	denyReason   = "nw-http-deny: server notes is down (served over HTTP)"
	heldReason   = "nw-http-held: denied after the endpoint held the call"
	postContext  = "nw-http-post-context"
	failContext  = "nw-http-failure-context"
	holdFor      = 3 * time.Second
	lateTimeout  = 2 // seconds: the "timeout" of the hook that never answers
	lateMaxHold  = 90 * time.Second
	mainTimeout  = 60 // seconds: the hook that holds for holdFor
	onFailureMin = "2.1.332"
)

// hookPost is one request the CLI made to the hook endpoint.
type hookPost struct {
	Path  string
	Token string
	Body  map[string]any
	// Aborted: the CLI closed the request before the endpoint answered.
	Aborted bool
}

// hookEndpoint is an in-test HTTP hook server on loopback. Its answers:
//
//	/pre   PreToolUse: deny the record tool (denyReason); hold a call whose
//	       message is "hold" for holdFor, then deny it (heldReason); else {}
//	/post  PostToolUse and PostToolUseFailure: additionalContext naming the event
//	/500   HTTP 500 whose body is a deny (the CLI must ignore it)
//	/late  never answers until the CLI gives up (or lateMaxHold), then a deny
//	/allow {"hookSpecificOutput":{…"permissionDecision":"allow"}} (the benchmark)
type hookEndpoint struct {
	srv   *httptest.Server
	mu    sync.Mutex
	posts []hookPost
}

func startHookEndpoint(t testing.TB) *hookEndpoint {
	e := &hookEndpoint{}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *hookEndpoint) url(path string) string { return e.srv.URL + path }

func (e *hookEndpoint) Posts() []hookPost {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.posts)
}

func (e *hookEndpoint) record(p hookPost) {
	e.mu.Lock()
	e.posts = append(e.posts, p)
	e.mu.Unlock()
}

func preDecision(decision, reason string) map[string]any {
	return map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PreToolUse",
		"permissionDecision": decision, "permissionDecisionReason": reason}}
}

func (e *hookEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	p := hookPost{Path: r.URL.Path, Token: r.Header.Get(tokenHeader)}
	if err := json.Unmarshal(raw, &p.Body); err != nil {
		http.Error(w, "bad payload: "+err.Error(), http.StatusBadRequest)
		return
	}
	// wait holds the request for d; false if the CLI closed it first.
	wait := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-r.Context().Done():
			return false
		}
	}
	var answer any = map[string]any{}
	status := http.StatusOK
	switch r.URL.Path {
	case "/pre":
		input, _ := p.Body["tool_input"].(map[string]any)
		switch {
		case strings.HasSuffix(str(p.Body["tool_name"]), "__record"):
			answer = preDecision("deny", denyReason)
		case input["message"] == "hold":
			p.Aborted = !wait(holdFor)
			answer = preDecision("deny", heldReason)
		}
	case "/post":
		ctx := postContext
		if str(p.Body["hook_event_name"]) == "PostToolUseFailure" {
			ctx = failContext
		}
		answer = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": p.Body["hook_event_name"],
			"additionalContext": ctx + " " + str(p.Body["tool_use_id"])}}
	case "/500":
		status, answer = http.StatusInternalServerError, preDecision("deny", "nw-http-500 must be ignored")
	case "/late":
		p.Aborted = !wait(lateMaxHold)
		answer = preDecision("deny", "nw-http-late must not arrive")
	case "/allow":
		answer = preDecision("allow", "")
	}
	e.record(p)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(answer)
}

func str(v any) string { s, _ := v.(string); return s }

// refusedURL is a loopback URL nothing listens on.
func refusedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/pre"
}

// readPayloads reads the payloads `cat >> file` command hooks appended.
func readPayloads(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the command hook wrote no payloads: %v", err)
	}
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func httpHook(url string, timeout int) map[string]any {
	return map[string]any{"type": "http", "url": url, "timeout": timeout,
		"headers": map[string]any{tokenHeader: nightToken}}
}

func commandHook(cmd string) map[string]any {
	return map[string]any{"type": "command", "command": cmd, "timeout": 60}
}

// runScripted runs one session whose fake model makes calls in order, and
// returns what the model received.
func runScripted(t *testing.T, version, name string, api *fakeapi.Server, servers, settings map[string]any,
	calls ...string) ([]fakeapi.ToolResult, testkit.ClaudeResult) {
	t.Helper()
	prompt := "SESSION " + name + "\n"
	var allowed []string
	for _, c := range calls {
		prompt += "CALL " + c + "\n"
	}
	for s := range servers {
		allowed = append(allowed, "mcp__"+s)
	}
	r := testkit.RunClaude(t, api, testkit.ClaudeRun{Version: version, Prompt: prompt,
		MCPConfig: testkit.WriteMCPConfig(t, servers), Settings: testkit.WriteSettings(t, settings), AllowedTools: allowed})
	r.RequireSuccess(t)
	got := api.SessionToolResults(name)
	if len(got) != len(calls) {
		t.Fatalf("session %s: the model received %d tool results for %d calls:\n%s", name, len(got), len(calls), r.Dump())
	}
	return got, r
}

// TestClaudeHTTPHook: an http PreToolUse hook (matcher mcp__.*) that
// answers a deny blocks the MCP call and its reason is the model's tool
// result; one that holds the call for a few seconds within its timeout is
// waited for; PostToolUse and PostToolUseFailure http hooks are called and
// their additionalContext reaches the model; the literal header is sent
// with every POST; and the payload POSTed has exactly the fields a command
// hook gets on stdin for the same call (a `cat` command hook beside it).
func TestClaudeHTTPHook(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		ep := startHookEndpoint(t)
		api := fakeapi.Start(t)
		dir := t.TempDir()
		side := filepath.Join(dir, "side-effect")
		entry := func(path, file string) []any {
			return []any{map[string]any{"matcher": "mcp__.*", "hooks": []any{httpHook(ep.url(path), mainTimeout),
				commandHook("cat >> " + filepath.Join(dir, file))}}}
		}
		settings := map[string]any{"hooks": map[string]any{
			"PreToolUse":         entry("/pre", "pre.json"),
			"PostToolUse":        entry("/post", "post.json"),
			"PostToolUseFailure": entry("/post", "failure.json"),
		}}
		servers := map[string]any{"notes": map[string]any{"command": testkit.BuildTestServer(t)}}
		recordArgs, _ := json.Marshal(map[string]string{"file": side, "text": "ran"})
		got, _ := runScripted(t, version, "http-hook", api, servers, settings,
			`mcp__notes__record `+string(recordArgs),
			`mcp__notes__echo {"message":"plain"}`,
			`mcp__notes__fail {"text":"boom"}`,
			`mcp__notes__echo {"message":"hold"}`)

		// 1. The deny blocks the call (no side effect) and its reason is
		// what the model receives.
		if !got[0].IsError || !strings.Contains(got[0].Content, denyReason) {
			t.Errorf("denied call: error=%v %q, want the reason %q", got[0].IsError, got[0].Content, denyReason)
		}
		if _, err := os.Stat(side); !os.IsNotExist(err) {
			t.Errorf("the denied record call ran (its file exists: %v)", err)
		}
		// 2. PostToolUse / PostToolUseFailure contexts reach the model.
		wantOK(t, got[1], "plain")
		if !hasContext(got[1], "PostToolUse", postContext+" "+got[1].ToolUseID) {
			t.Errorf("PostToolUse context not seen by the model: %q", got[1].HookContext)
		}
		wantFailed(t, got[2], "boom")
		if !hasContext(got[2], "PostToolUseFailure", failContext+" "+got[2].ToolUseID) {
			t.Errorf("PostToolUseFailure context not seen by the model: %q", got[2].HookContext)
		}
		// 4. A hold within the timeout is waited for: the deny that came
		// after it is the result.
		if !got[3].IsError || !strings.Contains(got[3].Content, heldReason) {
			t.Errorf("held call: error=%v %q, want the late deny %q", got[3].IsError, got[3].Content, heldReason)
		}

		posts := ep.Posts()
		byEvent := map[string][]hookPost{}
		for _, p := range posts {
			// 5. The literal header reaches the endpoint on every POST.
			if p.Token != nightToken {
				t.Errorf("POST %s (%s): %s = %q, want the night's token", p.Path, str(p.Body["hook_event_name"]), tokenHeader, p.Token)
			}
			if p.Aborted {
				t.Errorf("the CLI closed the held request before it was answered: %+v", p.Body)
			}
			byEvent[str(p.Body["hook_event_name"])] = append(byEvent[str(p.Body["hook_event_name"])], p)
		}
		if n := len(byEvent["PreToolUse"]); n != 4 {
			t.Errorf("%d PreToolUse POSTs, want 4", n)
		}
		if n := len(byEvent["PostToolUse"]); n != 1 {
			t.Errorf("%d PostToolUse POSTs, want 1", n)
		}
		if n := len(byEvent["PostToolUseFailure"]); n != 1 {
			t.Errorf("%d PostToolUseFailure POSTs, want 1", n)
		}
		// The POSTed payload has the command hook's fields, call by call.
		for event, file := range map[string]string{"PreToolUse": "pre.json", "PostToolUse": "post.json", "PostToolUseFailure": "failure.json"} {
			cmd := map[string]map[string]any{}
			for _, m := range readPayloads(t, filepath.Join(dir, file)) {
				cmd[str(m["tool_use_id"])] = m
			}
			for _, p := range byEvent[event] {
				id := str(p.Body["tool_use_id"])
				c, ok := cmd[id]
				if id == "" || !ok {
					t.Errorf("%s: POST with tool_use_id %q has no command-hook payload", event, id)
					continue
				}
				if hk, ck := keys(p.Body), keys(c); !slices.Equal(hk, ck) {
					t.Errorf("%s: http payload fields %v, command hook's %v", event, hk, ck)
				}
				for _, k := range []string{"hook_event_name", "tool_name", "tool_input", "session_id", "tool_use_id"} {
					if _, ok := p.Body[k]; !ok {
						t.Errorf("%s: http payload lacks %s: %v", event, k, keys(p.Body))
					}
				}
			}
			if ps := byEvent[event]; len(ps) > 0 {
				t.Logf("%s payload fields: %v", event, keys(ps[0].Body))
			}
		}
		if clirange.Compare(version, "2.1.332") >= 0 {
			for _, p := range byEvent["PreToolUse"] {
				// An object, not a string: {"name":"notes","source":"dynamic"}.
				if m, _ := p.Body["mcp_server"].(map[string]any); m["name"] != "notes" {
					t.Errorf("2.1.332 PreToolUse payload: mcp_server %v, want name notes", p.Body["mcp_server"])
				}
			}
		}
	})
}

// hookOutcomes lists the outcomes of the stream's hook_response events of
// event, for the hook whose name contains hookName (hook_name is the
// event and tool, e.g. "PreToolUse:mcp__late__echo").
func hookOutcomes(r testkit.ClaudeResult, event, tool string) []string {
	var out []string
	for _, ev := range r.HookResponses(event) {
		if strings.Contains(str(ev["hook_name"]), tool) {
			out = append(out, str(ev["outcome"]))
		}
	}
	return out
}

// TestClaudeHTTPHookFailsOpen: a PreToolUse http hook whose URL refuses
// connections, that answers 500 (with a deny in its body), or that does
// not answer within its timeout does not stop the call: it goes ahead and
// its result reaches the model (fail-open, every CLI). 2.1.332 has an
// opt-in "onFailure": "block" on the hook: with it the same refused URL
// blocks the call.
func TestClaudeHTTPHookFailsOpen(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		ep := startHookEndpoint(t)
		api := fakeapi.Start(t)
		server := map[string]any{"command": testkit.BuildTestServer(t)}
		refused := refusedURL(t)
		pre := func(tool string, hook map[string]any) any {
			return map[string]any{"matcher": "mcp__" + tool + "__.*", "hooks": []any{hook}}
		}
		entries := []any{
			pre("refused", httpHook(refused, 30)),
			pre("err500", httpHook(ep.url("/500"), 30)),
			pre("late", httpHook(ep.url("/late"), lateTimeout)),
		}
		servers := map[string]any{"refused": server, "err500": server, "late": server}
		calls := []string{`mcp__refused__echo {"message":"refused ran"}`, `mcp__err500__echo {"message":"500 ran"}`,
			`mcp__late__echo {"message":"late ran"}`}
		guard := clirange.Compare(version, onFailureMin) >= 0
		if guard {
			h := httpHook(refused, 30)
			h["onFailure"] = "block"
			entries = append(entries, pre("guarded", h))
			servers["guarded"] = server
			calls = append(calls, `mcp__guarded__echo {"message":"guarded ran"}`)
		}
		got, r := runScripted(t, version, "http-hook-faults", api, servers,
			map[string]any{"hooks": map[string]any{"PreToolUse": entries}}, calls...)
		for i, want := range []string{"refused ran", "500 ran", "late ran"} {
			wantOK(t, got[i], want)
		}
		// Each hook ran and failed (not skipped): the endpoint saw the 500
		// and the late POST, the CLI gave up the late one, and the stream
		// reports the refused one's error.
		posts := ep.Posts()
		seen := map[string]hookPost{}
		for _, p := range posts {
			seen[p.Path] = p
		}
		if _, ok := seen["/500"]; !ok {
			t.Errorf("the 500 endpoint was never called: %+v", posts)
		}
		if p, ok := seen["/late"]; !ok || !p.Aborted {
			t.Errorf("the late endpoint: called %v, closed by the CLI before the answer %v", ok, p.Aborted)
		}
		for _, tool := range []string{"refused", "err500", "late"} {
			t.Logf("%s: hook outcomes %v; the model saw %q, context %q", tool, hookOutcomes(r, "PreToolUse", "mcp__"+tool+"__"),
				got[slices.IndexFunc(got, func(g fakeapi.ToolResult) bool { return strings.Contains(g.ToolName, tool) })].Content,
				got[slices.IndexFunc(got, func(g fakeapi.ToolResult) bool { return strings.Contains(g.ToolName, tool) })].HookContext)
		}
		for _, l := range debugLines(r.DebugLog, "HTTP hook") {
			t.Log(l)
		}
		if o := hookOutcomes(r, "PreToolUse", "mcp__refused__"); !slices.Contains(o, "error") {
			t.Errorf("refused hook: outcomes %v, want an error reported", o)
		}
		if guard {
			if g := got[3]; !g.IsError || strings.Contains(g.Content, "guarded ran") {
				t.Errorf("onFailure block: the call went ahead: error=%v %q", g.IsError, g.Content)
			} else {
				t.Logf("onFailure block: the model saw %q", g.Content)
			}
		}
	})
}

// debugLines returns the lines of log containing s (for diagnostics).
func debugLines(log, s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			out = append(out, sc.Text())
		}
	}
	return out
}
