//go:build linux

package session

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// TestServersReadNoOtherKeyFromProc is issue 21's "a stdio server can read
// the CLI's environment from /proc/<ppid>/environ", through the real CLI
// on every supported version. Two stdio servers (alpha, beta) and an HTTP
// server (web, which answers only with its header) each have a key in the
// batch's env_file; beta also takes SHARED_TOKEN, which the job keeps for
// its own tools (session_env). Each stdio server, whoever starts it, writes
// its own environment and that of every ancestor it can read
// (/proc/<pid>/environ up to pid 1), then serves. The model calls the three
// servers and runs Bash.
//
// No server finds another server's key in any ancestor; the CLI's own
// environment holds no server's key at all, and still holds SHARED_TOKEN
// and the env_file's plain value; web got its header from the MCP config
// alone; Bash sees SHARED_TOKEN and not alpha's key.
func TestServersReadNoOtherKeyFromProc(t *testing.T) {
	testkit.ForEachClaude(t, testServersReadNoOtherKeyFromProc)
}

func testServersReadNoOtherKeyFromProc(t *testing.T, version string) {
	server := testkit.BuildTestServer(t)
	api := fakeapi.Start(t)
	dir := t.TempDir()
	sfx := strconv.Itoa(os.Getpid()) + strings.ReplaceAll(version, ".", "")
	keys := map[string]string{ // variable → value
		"ALPHA_KEY":     "nw-alpha-7c1e" + sfx,
		"BETA_KEY":      "nw-beta-3a9d" + sfx,
		"WEB_TOKEN":     "nw-web-5f2b" + sfx,
		"SHARED_TOKEN":  "nw-shared-8e4c" + sfx,
		"PLAIN_SETTING": "nw-plain-1d6a" + sfx,
	}
	// Whose each value is: the servers', the job's kept one, nobody's.
	own := map[string][]string{"alpha": {"ALPHA_KEY"}, "beta": {"BETA_KEY", "SHARED_TOKEN"}, "web": {"WEB_TOKEN"}}
	serverOnly := []string{"ALPHA_KEY", "BETA_KEY", "WEB_TOKEN"}

	var seenMu sync.Mutex
	var headerSeen int
	mcpHandler := mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Web-Token") != keys["WEB_TOKEN"] {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		if !strings.HasPrefix(r.UserAgent(), "nightwatch") {
			seenMu.Lock()
			headerSeen++
			seenMu.Unlock()
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(web.Close)

	dumps := filepath.Join(dir, "dumps")
	if err := os.MkdirAll(dumps, 0o700); err != nil {
		t.Fatal(err)
	}
	script := func(name string) string {
		path := filepath.Join(dir, name+"-server")
		body := fmt.Sprintf(`#!/bin/sh
out=%q/%s.$$
{
  echo "== self $$"
  tr '\0' '\n' < /proc/$$/environ
  pp=$PPID
  while [ "$pp" -gt 1 ]; do
    echo "== ancestor $pp $(cat /proc/$pp/comm 2>/dev/null)"
    tr '\0' '\n' < /proc/$pp/environ 2>/dev/null
    echo
    pp=$(awk '/^PPid:/{print $2}' /proc/$pp/status 2>/dev/null)
    [ -n "$pp" ] || break
  done
} > "$out.tmp" && mv "$out.tmp" "$out"
exec %q
`, dumps, name, server)
		if err := os.WriteFile(path, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var envFile strings.Builder
	for _, k := range []string{"ALPHA_KEY", "BETA_KEY", "WEB_TOKEN", "SHARED_TOKEN", "PLAIN_SETTING"} {
		fmt.Fprintf(&envFile, "%s=%s\n", k, keys[k])
	}
	if err := os.WriteFile(filepath.Join(dir, "night.env"), []byte(envFile.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(dir, "work")
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	prompt := strings.Join([]string{"SESSION procenv",
		`CALL mcp__alpha__echo {"message":"from alpha"}`,
		`CALL mcp__beta__echo {"message":"from beta"}`,
		`CALL mcp__web__echo {"message":"from web"}`,
		`CALL Bash {"command":"echo shared=$SHARED_TOKEN alpha=$ALPHA_KEY web=$WEB_TOKEN plain=$PLAIN_SETTING"}`,
	}, "\n")
	batch := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf(`version: 1
name: procenv
state_dir: ./state
env_file: ./night.env
agent: {command: %q}
servers:
  alpha: {command: %q, env: {ALPHA_KEY: "${ALPHA_KEY}"}}
  beta: {command: %q, env: {BETA_KEY: "${BETA_KEY}", GITHUB_TOKEN: "${SHARED_TOKEN}"}}
  web: {type: http, url: %q, headers: {X-Web-Token: "${WEB_TOKEN}"}}
jobs:
  - name: procenv
    cwd: %q
    servers: [alpha, beta, web]
    allowed_tools: [Bash, mcp__alpha, mcp__beta, mcp__web]
    session_env: [SHARED_TOKEN]
    timeout: 2m
    prompt: |
%s
`, testkit.ClaudeBinOf(t, version), script("alpha"), script("beta"), web.URL+mcpserver.StreamablePath, cwd,
		"      "+strings.ReplaceAll(prompt, "\n", "\n      "))
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	b, err := jobs.Load(batch, func(k string) (string, bool) {
		switch k {
		case "PATH":
			return os.Getenv("PATH"), true
		case "HOME":
			return home, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Batch: b, Job: b.Jobs[0], RunID: "20260101T020000Z", Attempt: 1,
		Binary: testkit.BuildNightwatch(t), Env: sessionTestClaudeEnv(t, api)}
	out, _, obs := sessionTestRun(t, context.Background(), spec)
	if out.Status != Done {
		t.Errorf("outcome %s %q", out.Status, out.Reason)
	}

	// The model's view: every call answered, Bash with the kept variable
	// and without a server's.
	results := api.SessionToolResults("procenv")
	if len(results) != 4 {
		t.Fatalf("the model got %d tool results, want 4: %+v", len(results), results)
	}
	for _, r := range results {
		t.Logf("%s %s: is_error=%v %q", version, r.ToolName, r.IsError, r.ModelSaw())
		if r.IsError {
			t.Errorf("%s failed: %q", r.ToolName, r.ModelSaw())
		}
	}
	bash := results[3].Content
	for _, want := range []string{"shared=" + keys["SHARED_TOKEN"], "plain=" + keys["PLAIN_SETTING"], "alpha= web= "} {
		if !strings.Contains(bash, want) {
			t.Errorf("Bash printed %q, want %q in it", bash, want)
		}
	}
	seenMu.Lock()
	if headerSeen == 0 {
		t.Errorf("web never got a request from the CLI with its header")
	}
	seenMu.Unlock()

	// The servers' view of /proc.
	files, err := filepath.Glob(filepath.Join(dumps, "*.[0-9]*"))
	if err != nil {
		t.Fatal(err)
	}
	underClaude := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, ".tmp") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _, _ := strings.Cut(filepath.Base(f), ".")
		mine := map[string]bool{}
		for _, k := range own[name] {
			mine[k] = true
		}
		var chain []string
		for i, sec := range strings.Split(string(data), "== ")[1:] {
			header, env, _ := strings.Cut(sec, "\n")
			chain = append(chain, fmt.Sprintf("%s (%d variables)", header, strings.Count(strings.TrimSpace(env), "\n")+1))
			fields := strings.Fields(header)
			isClaude := len(fields) >= 2 && fields[0] == "ancestor" && fields[1] == strconv.Itoa(obs.pgid)
			if i == 0 && !strings.Contains(env, keys[own[name][0]]) {
				t.Errorf("%s: the server's own environment lacks its key:\n%s", filepath.Base(f), env)
			}
			for k, v := range keys {
				has := strings.Contains(env, v)
				switch {
				case has && isClaude && slices.Contains(serverOnly, k):
					t.Errorf("%s: the CLI's environment (%s) holds %s, which only a server uses", filepath.Base(f), header, k)
				case has && !mine[k] && slices.Contains(serverOnly, k):
					t.Errorf("%s: %s holds another server's %s", filepath.Base(f), header, k)
				case !has && isClaude && (k == "SHARED_TOKEN" || k == "PLAIN_SETTING"):
					t.Errorf("%s: the CLI's environment (%s) lacks %s, which the session keeps", filepath.Base(f), header, k)
				}
			}
			if isClaude {
				underClaude[name] = true
			}
		}
		t.Logf("%s %s: %s", version, filepath.Base(f), strings.Join(chain, " ← "))
	}
	for _, name := range []string{"alpha", "beta"} {
		if !underClaude[name] {
			t.Errorf("no start of %s under the CLI (pid %d) was recorded (%d dumps)", name, obs.pgid, len(files))
		}
	}
}
