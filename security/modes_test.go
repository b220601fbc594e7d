package security_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// secrets seeded into one night. Each is unique, so a hit is never a
// coincidence.
type seeded struct {
	NotesKey     string // stdio server env value, healthy server
	WebToken     string // HTTP header bearer token; the server echoes it in its 503 body
	BrokenKey    string // env value of a crashing server that prints it on stderr
	StderrBearer string // a bearer token only in the crashing server's stderr (pattern only)
	StderrAPIKey string // API_KEY=… only in the crashing server's stderr (pattern only)
	ErrorBearer  string // a bearer token in a PostToolUseFailure error text
	ErrorKey     string // the crashing server's env value, in an error text
}

func newSeeded() seeded {
	return seeded{
		NotesKey:     "sk-ant-api03-NOTESKEYq8Zx3vT9wLmN2pR5sY7uA1bC4dE6fG",
		WebToken:     "webtokenZ9y8X7w6V5u4T3s2R1q0P9o8N7m6",
		BrokenKey:    "brokenkeyK1j2H3g4F5d6S7a8Q9w0E1r2T3y4",
		StderrBearer: "stderrbearerM4n5B6v7C8x9Z0l1K2j3H4g5",
		StderrAPIKey: "stderrapikeyP0o9I8u7Y6t5R4e3W2q1A2s3",
		ErrorBearer:  "errorbearerQ1w2E3r4T5y6U7i8O9p0A1s2D3",
		ErrorKey:     "brokenkeyK1j2H3g4F5d6S7a8Q9w0E1r2T3y4",
	}
}

func (s seeded) all() map[string]string {
	return map[string]string{"notes env": s.NotesKey, "web bearer": s.WebToken, "broken env": s.BrokenKey,
		"stderr bearer": s.StderrBearer, "stderr API_KEY": s.StderrAPIKey, "error-text bearer": s.ErrorBearer}
}

// night is one real night of the binary with a scripted agent, three
// servers (healthy stdio, HTTP answering 503 with its bearer token echoed,
// a stdio server crashing with its key on stderr), then the hook and the
// report writing into the same state folder.
type night struct {
	Dir, Batch, StateDir string
	Secrets              seeded
}

func runNight(t *testing.T) *night {
	t.Helper()
	bin := testkit.BuildNightwatch(t)
	server := testkit.BuildTestServer(t)
	s := newSeeded()
	dir := t.TempDir()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "upstream rejected Authorization: %s (api_key=%s)\n", r.Header.Get("Authorization"), s.WebToken)
	}))
	t.Cleanup(web.Close)

	agent := filepath.Join(dir, "agent")
	writeFile(t, agent, `#!/bin/sh
echo '{"type":"system","subtype":"init","session_id":"s","mcp_servers":[]}'
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0}'
`, 0o700)
	broken := filepath.Join(dir, "broken-server")
	writeFile(t, broken, fmt.Sprintf(`#!/bin/sh
echo "fatal: key $BROKEN_KEY rejected by upstream" >&2
echo "retrying with Authorization: Bearer %s" >&2
echo "API_KEY=%s" >&2
exit 1
`, s.StderrBearer, s.StderrAPIKey), 0o700)

	n := &night{Dir: dir, Batch: filepath.Join(dir, "batch.yaml"), StateDir: filepath.Join(dir, "state"), Secrets: s}
	writeFile(t, n.Batch, fmt.Sprintf(`version: 1
name: secure
state_dir: ./state
agent: {command: %q}
defaults: {retries: 0, on_unhealthy: skip}
health: {backoff: 1s, max_backoff: 2s, probe_timeout: 3s, prewarm_timeout: 5s}
servers:
  notes:
    command: %q
    env: {NOTES_API_KEY: %q}
  web:
    type: http
    url: %q
    headers: {Authorization: "Bearer %s"}
  broken:
    command: %q
    env: {BROKEN_KEY: %q}
jobs:
  - {name: a, prompt: "do a", servers: [notes]}
  - {name: b, prompt: "do b", servers: [web]}
  - {name: c, prompt: "do c", servers: [broken]}
  - {name: d, prompt: "do d"}
`, agent, server, s.NotesKey, web.URL+"/mcp", s.WebToken, broken, s.BrokenKey), 0o600)

	cmd := exec.Command(bin, "run", n.Batch, "--maintenance-interval", "200ms")
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("nightwatch run: %v\n%s", err, out)
	}
	if err == nil {
		t.Fatalf("nightwatch run: exit 0, want 1 (jobs b and c need dead servers)\n%s", out)
	}
	if strings.Contains(string(out), "panic:") {
		t.Fatalf("run panicked:\n%s", out)
	}
	for what, secret := range s.all() {
		if strings.Contains(string(out), secret) {
			t.Errorf("nightwatch run printed the %s", what)
		}
	}

	// The hook, writing the night's cache and events and a log under
	// state_dir: a probe of the crashing server, then a failure whose error
	// text carries credentials.
	cfg := filepath.Join(dir, "mcp.json")
	writeFile(t, cfg, fmt.Sprintf(`{"mcpServers":{"broken2":{"command":%q,"env":{"BROKEN_KEY":%q}},
		"web2":{"type":"http","url":%q,"headers":{"Authorization":"Bearer %s"}}}}`,
		broken, s.BrokenKey, web.URL+"/mcp", s.WebToken), 0o600)
	e := &hookEnv{Home: dir, State: filepath.Join(n.StateDir, "cache.json"),
		Events: filepath.Join(n.StateDir, "events.jsonl"), Log: filepath.Join(n.StateDir, "logs", "hook.log"), Config: cfg}
	for _, p := range []struct {
		payload string
		want    int
	}{
		{preIn("mcp__broken2__x", `{}`, dir), 2},
		{preIn("mcp__web2__x", `{}`, dir), 2},
		{`{"session_id":"s1","hook_event_name":"PostToolUseFailure","tool_name":"mcp__notes__x","tool_input":{},` +
			`"error":"MCP error -32603: upstream said 401 for Authorization: Bearer ` + s.ErrorBearer + ` (key ` + s.NotesKey + `)"}`, 0},
	} {
		r := runHook(t, e, strings.NewReader(p.payload))
		if r.Code != p.want {
			t.Fatalf("hook: exit %d, want %d: %s", r.Code, p.want, r.Stderr)
		}
		// The deny reason is what the model reads; stderr goes to logs.
		for what, secret := range s.all() {
			if strings.Contains(r.Stdout+r.Stderr, secret) {
				t.Errorf("the hook's output holds the %s: %s%s", what, r.Stdout, r.Stderr)
			}
		}
	}
	for _, format := range []string{"json", "md", "html"} {
		cmd := exec.Command(bin, "report", n.Batch, "--format", format, "-o", filepath.Join(n.StateDir, "reports", "morning."+format))
		cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("report %s: %v\n%s", format, err, out)
		}
	}
	return n
}

// One night, then every file and folder under state_dir: files 0600,
// folders 0700, and no seeded credential anywhere (the session MCP configs,
// which must hold the servers' resolved credentials for Claude Code, are
// removed when their session ends).
func TestNightStateModesAndSecrets(t *testing.T) {
	n := runNight(t)
	var files int
	seen := map[string]bool{}
	walkFiles(t, n.StateDir, func(path string, fi os.FileInfo) {
		rel, _ := filepath.Rel(n.StateDir, path)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			t.Errorf("%s: a symlink in state_dir", rel)
		case fi.IsDir():
			if perm := fi.Mode().Perm(); perm != 0o700 {
				t.Errorf("folder %s has mode %#o, want 0700", rel, perm)
			}
		default:
			files++
			if perm := fi.Mode().Perm(); perm != 0o600 {
				t.Errorf("file %s has mode %#o, want 0600", rel, perm)
			}
			data := readFile(t, path)
			for what, secret := range n.Secrets.all() {
				if strings.Contains(data, secret) {
					t.Errorf("%s holds the %s %q", rel, what, secret)
				}
			}
			for _, kind := range []string{"cache.json", "events.jsonl", ".log", ".md", ".html", ".json", "runs/"} {
				if strings.Contains(rel, kind) {
					seen[kind] = true
				}
			}
		}
	})
	for _, kind := range []string{"cache.json", "events.jsonl", ".log", ".md", ".html", ".json", "runs/"} {
		if !seen[kind] {
			t.Errorf("no %s file under state_dir: the night wrote less than expected", kind)
		}
	}
	t.Logf("%d files checked", files)
	// Redaction happened, rather than the error texts never being stored.
	cache := readFile(t, filepath.Join(n.StateDir, "cache.json"))
	if !strings.Contains(cache, "[REDACTED]") {
		t.Errorf("cache has no redacted error text; the test proves nothing:\n%s", cache)
	}
}

// The article's Node hook left its cache world-readable (0644); the first
// write by nightwatch's hook makes it 0600, and the folders and files the
// hook creates on a fresh machine are 0700 and 0600.
func TestHookTightensAndCreatesPrivateFiles(t *testing.T) {
	server := testkit.BuildTestServer(t)
	e := newHookEnv(t)
	e.State = filepath.Join(e.Home, ".claude", "mcp-health-cache.json")
	writeFile(t, e.State, `{"version":1,"servers":{}}`, 0o644)
	if err := os.Chmod(e.State, 0o644); err != nil {
		t.Fatal(err)
	}
	e.Events = filepath.Join(e.Home, "fresh", "events", "events.jsonl")
	e.Log = filepath.Join(e.Home, "fresh", "logs", "hook.log")
	e.Config = filepath.Join(e.Home, "mcp.json")
	writeFile(t, e.Config, fmt.Sprintf(`{"mcpServers":{"notes":{"command":%q},"dead":{"command":"/nonexistent"}}}`, server), 0o600)
	if r := runHook(t, e, strings.NewReader(preIn("mcp__notes__x", `{}`, e.Home))); r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	if r := runHook(t, e, strings.NewReader(preIn("mcp__dead__x", `{}`, e.Home))); r.Code != 2 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	for _, root := range []string{filepath.Dir(e.State), filepath.Join(e.Home, "fresh")} {
		walkFiles(t, root, func(path string, fi os.FileInfo) {
			if path == filepath.Dir(e.State) {
				return // the user's ~/.claude, not nightwatch's
			}
			want := os.FileMode(0o600)
			if fi.IsDir() {
				want = 0o700
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s: mode %#o, want %#o", path, fi.Mode().Perm(), want)
			}
		})
	}
}
