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
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
)

// ownerSecrets are the keys of one night (issue 12). Each is unique and
// matches no redaction pattern, so only knowing the value can remove it.
type ownerSecrets struct {
	Alpha, Beta, Dump, DBPassword, Plain, Agent, URLPath string
}

func newOwnerSecrets() ownerSecrets {
	return ownerSecrets{
		Alpha:      "alphaQ7w3Zr9Lk2Mx5Tb8",
		Beta:       "betaH4n6Vc1Ds8Pq3Wy7",
		Dump:       "dumpJ2k5Lm8Nb3Vc6Xz9",
		DBPassword: "dbpwR5t8Yu1Io4Pa7Sd0",
		Plain:      "plainF3g6Hj9Kl2Zx5Cv",
		Agent:      "agentM1n4Bv7Cx0Zl3Kj",
		URLPath:    "urlpathE6r9Ty2Ui5Op8",
	}
}

// leaks are the secrets no output may hold, by what they are.
func (s ownerSecrets) leaks() map[string]string {
	return map[string]string{"alpha's key": s.Alpha, "beta's key": s.Beta, "dump's key": s.Dump,
		"env_file's DB_PASSWORD": s.DBPassword, "env_file's plain value": s.Plain,
		"the agent's ANTHROPIC_API_KEY": s.Agent, "the URL's secret path segment": s.URLPath}
}

func requireNoLeak(t *testing.T, what, text string, s ownerSecrets) {
	t.Helper()
	for name, secret := range s.leaks() {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds %s (%s): %.600s", what, name, secret, text)
		}
	}
}

// TestNightSecretsStayWithTheirOwner is issue 12's adversarial night
// through the real binary and the real CLI:
//
//   - alpha crashes whenever nightwatch starts it (preflight, the hook's
//     probe), printing its own key, beta's key and an env_file secret; when
//     Claude Code starts it, it serves, so the model calls it and reads the
//     hook's deny reason;
//   - dump writes its whole environment to a file on every start, then
//     serves: it must see its own key and the base, nothing else;
//   - web is a secret-URL service (/api/mcp/s/<secret>/mcp) that serves
//     Claude Code and answers nightwatch's probes 404.
//
// No secret may reach the deny reasons, the console, cache.json,
// events.jsonl, the journal, the night's log, the session files or the
// reports (and status and doctor output).
func TestNightSecretsStayWithTheirOwner(t *testing.T) {
	testkit.ForEachClaude(t, testNightSecretsStayWithTheirOwner)
}

func testNightSecretsStayWithTheirOwner(t *testing.T, version string) {
	bin := testkit.BuildNightwatch(t)
	server := testkit.BuildTestServer(t)
	api := fakeapi.Start(t)
	s := newOwnerSecrets()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	mcpHandler := mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{})
	secretPath := "/api/mcp/s/" + s.URLPath + "/mcp"
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != secretPath || strings.HasPrefix(r.UserAgent(), "nightwatch") {
			http.NotFound(w, r)
			return
		}
		r.URL.Path = mcpserver.StreamablePath
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(web.Close)

	// Who started the server: nightwatch (a probe) or Claude Code (through
	// the session's exec-server, which guards the server as its parent).
	parent := `pp=$PPID
parent=$(cat /proc/$pp/comm 2>/dev/null)
# A session's or a probe's exec-server guards the server as its parent:
# who started that exec-server says who started the server.
if [ "$parent" = nightwatch ] && tr '\0' ' ' < /proc/$pp/cmdline | grep -q ' exec-server '; then
  pp=$(cut -d' ' -f4 /proc/$pp/stat)
  parent=$(cat /proc/$pp/comm 2>/dev/null)
  [ "$parent" = nightwatch ] || [ "$parent" = nightwatch-hook ] || parent=session
fi
# The hook's own executable is nightwatch too.
[ "$parent" = nightwatch-hook ] && parent=nightwatch`
	alpha := filepath.Join(dir, "alpha-server")
	writeFile(t, alpha, fmt.Sprintf(`#!/bin/sh
%s
if [ "$parent" = nightwatch ]; then
  echo "config beta_api_key is %s, db_password is %s, alpha_api_key is $ALPHA_API_KEY" >&2
  exit 1
fi
exec %q
`, parent, s.Beta, s.DBPassword, server), 0o700)
	dumps := filepath.Join(dir, "dumps")
	if err := os.MkdirAll(dumps, 0o700); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(dir, "dump-server")
	writeFile(t, dump, fmt.Sprintf(`#!/bin/sh
%s
{ echo "PARENT=$parent"; env; } > %q/env.$$
exec %q
`, parent, dumps, server), 0o700)

	writeFile(t, filepath.Join(dir, "night.env"), fmt.Sprintf(
		"ALPHA_API_KEY=%s\nBETA_API_KEY=%s\nDUMP_API_KEY=%s\nDB_PASSWORD=%s\nPLAIN_SETTING=%s\n",
		s.Alpha, s.Beta, s.Dump, s.DBPassword, s.Plain), 0o600)
	batch := filepath.Join(dir, "night.yaml")
	writeFile(t, batch, fmt.Sprintf(`version: 1
name: owners
state_dir: ./state
env_file: ./night.env
agent: {command: %q}
defaults: {timeout: 2m, retries: 0, on_unhealthy: run}
health: {backoff: 1s, max_backoff: 2s, probe_timeout: 5s, prewarm_timeout: 10s, max_hold: 0s}   # the deny reason is what is checked, not a hold
servers:
  alpha: {command: %q, env: {ALPHA_API_KEY: "${ALPHA_API_KEY}"}}
  beta: {command: %q, env: {BETA_API_KEY: "${BETA_API_KEY}"}}
  dump: {command: %q, env: {DUMP_API_KEY: "${DUMP_API_KEY}"}}
  web: {type: http, url: %q}
jobs:
  - {name: alpha, servers: [alpha], allowed_tools: [mcp__alpha], prompt: %q}
  - {name: dump, servers: [dump, beta], allowed_tools: [mcp__dump, mcp__beta], prompt: %q}
  - {name: web, servers: [web], allowed_tools: [mcp__web], prompt: %q}
`, testkit.ClaudeBinOf(t, version), alpha, server, dump, web.URL+secretPath,
		"SESSION alpha\nCALL mcp__alpha__echo {\"message\":\"a\"}",
		"SESSION dump\nCALL mcp__dump__echo {\"message\":\"d\"}\nCALL mcp__beta__echo {\"message\":\"b\"}",
		"SESSION web\nCALL mcp__web__echo {\"message\":\"w\"}"), 0o600)

	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + api.URL(),
		"ANTHROPIC_API_KEY=" + s.Agent, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "MCP_CONNECT_TIMEOUT_MS=30000",
		"PWD=" + dir}
	cmd := exec.Command(bin, "run", batch)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("nightwatch run: %v\n%s", err, out)
	}
	requireNoLeak(t, "the console of `nightwatch run`", string(out), s)

	// What the model read.
	a := api.SessionToolResults("alpha")
	// 2.1.332 prefixes "PreToolUse:<tool> hook error: ".
	if len(a) != 1 || !a[0].IsError || !strings.Contains(a[0].Content, `nightwatch: MCP server "alpha" is`) {
		t.Fatalf("alpha: want nightwatch's deny reason, got %+v\n%s", a, out)
	}
	if !strings.Contains(a[0].Content, "[REDACTED]") {
		t.Errorf("alpha's deny reason does not quote the crash (redacted); the test proves nothing: %q", a[0].Content)
	}
	t.Logf("the model read: %s", a[0].Content)
	requireNoLeak(t, "alpha's deny reason", a[0].ModelSaw(), s)
	w := api.SessionToolResults("web")
	if len(w) != 1 || !w[0].IsError || !strings.Contains(w[0].Content, `nightwatch: MCP server "web" is`) {
		t.Fatalf("web: want nightwatch's deny reason, got %+v\n%s", w, out)
	}
	t.Logf("the model read: %s", w[0].Content)
	requireNoLeak(t, "web's deny reason", w[0].ModelSaw(), s)
	for _, r := range api.ToolResults() {
		requireNoLeak(t, "a tool result of session "+r.Session, r.ModelSaw()+r.Context, s)
	}

	// What each server's process got.
	requireOwnEnvironment(t, dumps, s)

	// The operator commands.
	state := filepath.Join(dir, "state")
	for _, args := range [][]string{
		{"report", batch, "--format", "md", "-o", filepath.Join(state, "reports", "after.md")},
		{"report", batch, "--format", "html", "-o", filepath.Join(state, "reports", "after.html")},
		{"report", batch, "--format", "json", "-o", filepath.Join(state, "reports", "after.json")},
		{"report", batch},
		{"status", "--state", filepath.Join(state, "cache.json"), "--json"},
		{"status", "--state", filepath.Join(state, "cache.json")},
		{"logs", batch},
		{"doctor", batch},
	} {
		c := exec.Command(bin, args...)
		c.Dir, c.Env = dir, env
		got, err := c.CombinedOutput()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("nightwatch %s: %v", args[0], err)
		}
		requireNoLeak(t, "the output of `nightwatch "+strings.Join(args[:1], " ")+"`", string(got), s)
		// PWD's name looks sensitive; its value is no secret and stays
		// readable in redacted output.
		if args[0] == "doctor" && !strings.Contains(string(got), batch+" loads") {
			t.Errorf("doctor does not show the batch's path (over-redacted?):\n%s", got)
		}
	}

	// Every file of the night: cache, events, journal, log, session
	// streams, reports.
	seen := map[string]bool{}
	walkFiles(t, state, func(path string, fi os.FileInfo) {
		if fi.IsDir() {
			return
		}
		rel, _ := filepath.Rel(state, path)
		data := readFile(t, path)
		requireNoLeak(t, rel, data, s)
		for _, kind := range []string{"cache.json", "events.jsonl", "logs/", "reports/", "runs/"} {
			if strings.Contains(rel, kind) {
				seen[kind] = true
			}
		}
		if strings.HasPrefix(rel, "runs/") && strings.Count(rel, "/") == 1 && strings.HasSuffix(rel, ".jsonl") {
			seen["journal"] = true
		}
		if strings.HasPrefix(rel, "logs/") && strings.HasSuffix(rel, ".log") &&
			!strings.Contains(data, `"server":"alpha"`) {
			t.Errorf("the night's log %s has no line about alpha; the test proves nothing", rel)
		}
	})
	for _, kind := range []string{"cache.json", "events.jsonl", "journal", "logs/", "reports/", "runs/"} {
		if !seen[kind] {
			t.Errorf("no %s under state_dir: the night wrote less than this test checks", kind)
		}
	}
	if cache := readFile(t, filepath.Join(state, "cache.json")); !strings.Contains(cache, "[REDACTED]") {
		t.Errorf("the cache holds no redacted crash text; the test proves nothing:\n%s", cache)
	}
}

// requireOwnEnvironment checks every environment dump-server recorded:
// its own key and the base variables, nothing of another server's, of
// env_file's other values or of the agent's key. At least one start must
// be Claude Code's (the session), not only nightwatch's probes.
func requireOwnEnvironment(t *testing.T, dumps string, s ownerSecrets) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dumps, "env.*"))
	bySession := 0
	for _, f := range files {
		data := readFile(t, f)
		if !strings.Contains(data, "PARENT=nightwatch\n") {
			bySession++
		}
		for _, want := range []string{"DUMP_API_KEY=" + s.Dump + "\n", "\nPATH=", "\nHOME="} {
			if !strings.Contains(data, want) {
				t.Errorf("%s: the server lacks %q:\n%s", filepath.Base(f), strings.TrimSpace(want), data)
			}
		}
		for name, secret := range map[string]string{"beta's key": s.Beta, "alpha's key": s.Alpha,
			"env_file's DB_PASSWORD": s.DBPassword, "env_file's plain value": s.Plain, "ANTHROPIC_API_KEY": s.Agent} {
			if strings.Contains(data, secret) {
				t.Errorf("%s (%s): the server's environment holds %s:\n%s", filepath.Base(f), firstLine(data), name, data)
			}
		}
	}
	if bySession == 0 {
		t.Errorf("no environment recorded from a start by Claude Code (%d by nightwatch's probes)", len(files))
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// The hook knows the secrets of every server of the MCP configs it reads,
// not only of the server it probes: alpha crashes printing beta's env key
// and web's bearer token (both only in the config), and the agent's key
// (only in the hook's environment); the deny reason, the cache, the
// events and the hook's log hold none of them.
func TestHookRedactsEveryConfiguredServersSecrets(t *testing.T) {
	const beta, webToken, agent = "betaConfigA1s2D3f4G5h6", "webTokenJ7k8L9z0X1c2", "agentKeyV3b4N5m6Q7w8"
	e := newHookEnv(t)
	crash := filepath.Join(e.Home, "alpha-server")
	writeFile(t, crash, fmt.Sprintf("#!/bin/sh\necho \"beta is %s, web is %s, agent is %s\" >&2\nexit 1\n", beta, webToken, agent), 0o700)
	e.Config = filepath.Join(e.Home, "mcp.json")
	writeFile(t, e.Config, fmt.Sprintf(`{"mcpServers":{
		"alpha":{"command":%q},
		"beta":{"command":"/bin/true","env":{"BETA_CONFIG":%q}},
		"web":{"type":"http","url":"https://example.invalid/mcp","headers":{"X-Custom":%q}}}}`, crash, beta, webToken), 0o600)
	r := runHook(t, e, strings.NewReader(preIn("mcp__alpha__x", `{}`, e.Home)), "ANTHROPIC_API_KEY="+agent)
	if r.Code != 2 {
		t.Fatalf("want a deny, got exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
	for what, text := range map[string]string{"the deny reason": r.Stdout + r.Stderr,
		"the cache": readFile(t, e.State), "the events": readFile(t, e.Events), "the hook's log": readFile(t, e.Log)} {
		for _, secret := range []string{beta, webToken, agent} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds %q: %s", what, secret, text)
			}
		}
	}
	if !strings.Contains(r.Stdout, "[REDACTED]") {
		t.Errorf("the deny reason does not quote the redacted crash; the test proves nothing: %s", r.Stdout)
	}
}
