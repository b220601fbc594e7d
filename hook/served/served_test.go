package served_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/hook/served"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// world is one run's files: a cache seeded the same way for the command
// hook and for the served hook, each in a folder of its own.
type world struct {
	env  []string
	args []string
}

func newWorld(t *testing.T, seed map[string]*healthcheck.Entry, extraEnv []string) world {
	t.Helper()
	dir := t.TempDir()
	state := filepath.Join(dir, "cache.json")
	err := (&healthcheck.Store{Path: state}).Update(func(f *healthcheck.File) error {
		for n, e := range seed {
			c := *e
			if c.Status == healthcheck.StatusUnhealthy && c.NextRetryAt == 0 {
				c.NextRetryAt = healthcheck.MillisOf(time.Now().Add(2 * time.Second))
				c.CheckedAt = healthcheck.MillisOf(time.Now().Add(-time.Second))
			}
			f.Servers[n] = &c
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mcp := filepath.Join(dir, "mcp.json")
	// notes is a real stdio server, for the probe of a hold; my.notes is
	// never started (its cases decide from the cache).
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"notes": map[string]any{"command": testkit.BuildTestServer(t)},
		"my.notes": map[string]any{"command": "/nonexistent/notes-server"}}})
	if err := os.WriteFile(mcp, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append([]string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}, extraEnv...)
	return world{env: env, args: []string{"--state", state, "--config", mcp, "--events", filepath.Join(dir, "events.jsonl"),
		"--ttl", "2m0s", "--backoff", "30s", "--max-backoff", "10m0s", "--failure-threshold", "1", "--max-hold", "8s"}}
}

// command runs the dedicated hook executable, as Claude Code runs the
// command hook: its stdout, and its exit code.
func (w world) command(t *testing.T, payload string) (string, int) {
	t.Helper()
	cmd := exec.Command(testkit.BuildHook(t), w.args...)
	cmd.Env = w.env
	cmd.Stdin = strings.NewReader(payload)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out.String()), code
}

// session is w as the night registers it.
func (w world) session(t *testing.T) served.Session {
	t.Helper()
	getenv := environ.Lookup(w.env)
	home, _ := getenv("HOME")
	k, err := served.Knobs(w.args, getenv, home)
	if err != nil {
		t.Fatal(err)
	}
	return served.Session{Environ: w.env, Getenv: getenv, Home: home, Knobs: k}
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) log(key, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, key+": "+line)
}

func startServer(t *testing.T, logs *logLines) *served.Server {
	t.Helper()
	s, err := served.Start(logs.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// post sends payload as Claude Code does: a fresh connection, the token
// header, JSON.
func post(t *testing.T, url, token, payload string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set(served.TokenHeader, token)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

func pre(tool, extra string) string {
	return `{"session_id":"s1","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"` + tool +
		`","tool_input":{"x":1},"tool_use_id":"toolu_1"` + extra + `}`
}

// TestServedAnswersAsTheCommandHook: for the same payload, cache and
// knobs, the served hook's 200 body is exactly what the command hook
// (the nightwatch-hook process, handing on to `nightwatch hook` when the
// cache cannot answer alone) prints on stdout: a deny, an
// additionalContext, or nothing ({}), and the cache ends the same.
func TestServedAnswersAsTheCommandHook(t *testing.T) {
	now := time.Now()
	up := &healthcheck.Entry{Status: healthcheck.StatusHealthy, CheckedAt: healthcheck.MillisOf(now),
		ExpiresAt: healthcheck.MillisOf(now.Add(24 * time.Hour))}
	down := &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, LastFailureCode: healthcheck.CodeUnavailable,
		LastError: "HTTP 503", FailureCount: 3, NextRetryAt: healthcheck.MillisOf(now.Add(90*time.Minute + 30*time.Second))}
	// Down by a probe's verdict, retried in a moment: the call is held,
	// the probe then finds the server back, and the model is told. Its
	// clock starts when its world is made (probedNow).
	probed := &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, LastFailureCode: healthcheck.CodeUnavailable,
		Witness: healthcheck.WitnessProbe, LastError: "HTTP 503", FailureCount: 1}
	fail := `{"session_id":"s1","cwd":"/tmp","hook_event_name":"PostToolUseFailure","tool_name":"mcp__notes__echo","tool_input":{"x":1},"tool_use_id":"toolu_2","error":"MCP error -32000: upstream returned 503 Service Unavailable"}`
	tests := []struct {
		name    string
		seed    map[string]*healthcheck.Entry
		env     []string
		payload string
		want    string // a substring of the body; "{}" for exactly {}
	}{
		{"non-MCP tool", nil, nil, pre("Bash", ""), "{}"},
		{"cache hit", map[string]*healthcheck.Entry{"notes": up}, nil, pre("mcp__notes__echo", ""), "{}"},
		{"cached block", map[string]*healthcheck.Entry{"notes": down}, nil, pre("mcp__notes__echo", ""), `"permissionDecision":"deny"`},
		{"cached block, 2.1.332 mcp_server object", map[string]*healthcheck.Entry{"my.notes": down}, nil,
			pre("mcp__my_notes__echo", `,"mcp_server":{"name":"my.notes","source":"dynamic"}`), `MCP server \"my.notes\" is`},
		{"held until back: context", map[string]*healthcheck.Entry{"notes": probed}, nil,
			pre("mcp__notes__echo", ""), `"additionalContext"`},
		{"failure recorded", map[string]*healthcheck.Entry{"notes": up}, nil, fail, "{}"},
		{"success recorded", map[string]*healthcheck.Entry{"notes": up}, nil,
			`{"session_id":"s1","cwd":"/tmp","hook_event_name":"PostToolUse","tool_name":"mcp__notes__echo","tool_input":{"x":1},"tool_response":[{"type":"text","text":"ok"}]}`, "{}"},
		{"not JSON: allowed as the command hook allows", nil, nil, `{"tool_name":`, "{}"},
	}
	testkit.BuildHook(t)
	var logs logLines
	srv := startServer(t, &logs)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cw := newWorld(t, tt.seed, tt.env)
			out, code := cw.command(t, tt.payload)
			sw := newWorld(t, tt.seed, tt.env)
			key, err := srv.Register(sw.session(t))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Unregister(key)
			status, body := post(t, srv.URL(key), srv.Token(), tt.payload)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			if out == "" {
				out = "{}"
			}
			// A hold's context says how long the call waited: the two
			// runs wait their own times.
			if digits.ReplaceAllString(body, "N") != digits.ReplaceAllString(out, "N") {
				t.Fatalf("served %s\ncommand (exit %d) %s", body, code, out)
			}
			if tt.want == "{}" && body != "{}" || !strings.Contains(body, tt.want) {
				t.Fatalf("want %s in %s", tt.want, body)
			}
			if !json.Valid([]byte(body)) {
				t.Fatalf("not JSON: %s", body)
			}
			if code == 2 != strings.Contains(body, `"deny"`) {
				t.Fatalf("exit %d for %s", code, body)
			}
			if cs, ss := cacheOf(t, cw), cacheOf(t, sw); cs != ss {
				t.Fatalf("caches differ:\ncommand %s\nserved  %s", cs, ss)
			}
		})
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if !slicesContain(logs.lines, "is unavailable (HTTP 503), so this call was blocked") {
		t.Errorf("the deny's reason did not reach the night's log: %q", logs.lines)
	}
}

var digits = regexp.MustCompile(`[0-9.]+`)

// cacheOf is the cache's servers with what depends on the clock or the
// process left out: status, failure code, count.
func cacheOf(t *testing.T, w world) string {
	t.Helper()
	f, err := (&healthcheck.Store{Path: w.args[1]}).Read()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, n := range []string{"notes", "my.notes"} {
		if e := f.Entry(n); e != nil {
			b.WriteString(n + "=" + string(e.Status) + "/" + string(e.LastFailureCode) + "/" + strings.Repeat("|", e.FailureCount) + " ")
		}
	}
	return b.String()
}

func slicesContain(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// TestServedRefuses: a wrong or missing token, a session never registered
// or no longer, and a method other than POST get a refusal and nothing is
// decided (the cache stays untouched); the right token on a registered
// session is answered.
func TestServedRefuses(t *testing.T) {
	down := &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, LastFailureCode: healthcheck.CodeUnavailable,
		NextRetryAt: healthcheck.MillisOf(time.Now().Add(time.Hour))}
	w := newWorld(t, map[string]*healthcheck.Entry{"notes": down}, nil)
	var logs logLines
	srv := startServer(t, &logs)
	key, err := srv.Register(w.session(t))
	if err != nil {
		t.Fatal(err)
	}
	gone, err := srv.Register(w.session(t))
	if err != nil {
		t.Fatal(err)
	}
	srv.Unregister(gone)
	events := w.args[5]
	payload := pre("mcp__notes__echo", "")
	wrong := strings.Repeat("0", len(srv.Token()))
	tests := []struct {
		name, url, token string
		want             int
	}{
		{"missing token", srv.URL(key), "", http.StatusForbidden},
		{"wrong token", srv.URL(key), wrong, http.StatusForbidden},
		{"token's prefix", srv.URL(key), srv.Token()[:10], http.StatusForbidden},
		{"unknown session", srv.URL("0123456789abcdef"), srv.Token(), http.StatusForbidden},
		{"unregistered session", srv.URL(gone), srv.Token(), http.StatusForbidden},
		{"no session", srv.URL(""), srv.Token(), http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, tt.url, tt.token, payload)
			if status != tt.want || strings.Contains(body, "deny") {
				t.Fatalf("status %d, body %s", status, body)
			}
			if _, err := os.Stat(events); !os.IsNotExist(err) {
				t.Fatalf("something was decided: the events file exists (%v)", err)
			}
		})
	}
	resp, err := http.Get(srv.URL(key))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if status, body := post(t, srv.URL(key), srv.Token(), payload); status != http.StatusOK || !strings.Contains(body, `"deny"`) {
		t.Fatalf("the registered session: %d %s", status, body)
	}
	if len(logs.lines) == 0 || strings.Contains(strings.Join(logs.lines, "\n"), srv.Token()) {
		t.Fatalf("log: %q", logs.lines)
	}
}

// TestServedHoldEndsWithTheRequest: a call held for a server that is down
// (its retry due within the hold) waits in the handler; when the client
// gives up on the request, as the CLI does at the hook's timeout, the hold
// ends with it: the events file's held line says cancelled, and the
// handler has returned (Close waits for nothing else).
func TestServedHoldEndsWithTheRequest(t *testing.T) {
	down := &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, LastFailureCode: healthcheck.CodeUnavailable,
		Witness: healthcheck.WitnessProbe, LastError: "HTTP 503", FailureCount: 1,
		NextRetryAt: healthcheck.MillisOf(time.Now().Add(time.Hour))}
	// A repair that never ends: the call is held the whole max hold.
	w := newWorld(t, map[string]*healthcheck.Entry{"notes": down}, []string{"NIGHTWATCH_RECONNECT_NOTES=sleep 600"})
	w.args = append(w.args, "--max-hold", "5m")
	var logs logLines
	srv := startServer(t, &logs)
	key, err := srv.Register(w.session(t))
	if err != nil {
		t.Fatal(err)
	}
	events := w.args[5]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL(key), strings.NewReader(pre("mcp__notes__echo", "")))
		req.Header.Set(served.TokenHeader, srv.Token())
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			err = fmt.Errorf("answered before the request was given up: %s", body)
		}
		done <- err
	}()
	// A bound for a failing run only (the hold itself is 5 minutes).
	giveUp := time.Now().Add(2 * time.Minute)
	waitFor := func(what string) {
		t.Helper()
		for {
			data, _ := os.ReadFile(events)
			if strings.Contains(string(data), what) {
				return
			}
			if time.Now().After(giveUp) {
				t.Fatalf("the events file still has no %s:\n%s", what, data)
			}
			select {
			case err := <-done:
				t.Fatalf("the request ended (%v) before the events file had %s:\n%s", err, what, data)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	waitFor(`"kind":"holding"`)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's request: %v", err)
	}
	waitFor(`"outcome":"cancelled"`)
}
