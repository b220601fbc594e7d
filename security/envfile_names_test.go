package security_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

// TestHookKnowsEveryEnvFileValue: an env_file value of a plain name
// (REGION_STORE_PATH, not KEY/TOKEN/SECRET-named, used by no server's env) that
// a server prints in its crash text, through the real binary and the real
// CLI. The crash happens only under the hook's probe (preflight sees a
// plain crash), so only the hook inside the session can redact it: it
// never reaches the model's deny reason, the cache or the events. Before:
// the session's environment did not say which variables came from
// env_file, and the hook let the value through. The backoff is a few
// milliseconds so that preflight's verdict has always expired when the
// session's call comes, however fast the CLI starts: the hook probes.
func TestHookKnowsEveryEnvFileValue(t *testing.T) {
	testkit.ForEachClaude(t, testHookKnowsEveryEnvFileValue)
}

func testHookKnowsEveryEnvFileValue(t *testing.T, version string) {
	const region = "regionW8e5Rt2Yq9Ua6Sb3"
	bin := testkit.BuildNightwatch(t)
	server := testkit.BuildTestServer(t)
	api := fakeapi.Start(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	alpha := filepath.Join(dir, "alpha-server")
	// The hook's probe: parent nightwatch-hook, or nightwatch with the
	// command line "... hook", or, where the night serves the hook (Claude
	// Code 2.1.332), the night itself once the session has started the
	// server (the marker); before that, the night's probe is preflight's.
	started := filepath.Join(dir, "session-started")
	writeFile(t, alpha, fmt.Sprintf(`#!/bin/sh
pp=$PPID
parent=$(cat /proc/$pp/comm 2>/dev/null)
# A session's or a probe's exec-server guards the server as its parent:
# who started that exec-server says who started the server.
if [ "$parent" = nightwatch ] && tr '\0' ' ' < /proc/$pp/cmdline | grep -q ' exec-server '; then
  pp=$(cut -d' ' -f4 /proc/$pp/stat)
  parent=$(cat /proc/$pp/comm 2>/dev/null)
  [ "$parent" = nightwatch ] || [ "$parent" = nightwatch-hook ] || parent=session
fi
hook=
if [ "$parent" = nightwatch-hook ]; then parent=nightwatch; hook=1; fi
if [ "$parent" = nightwatch ]; then
  if [ -n "$hook" ] || tr '\0' ' ' < /proc/$pp/cmdline | grep -q ' hook' || [ -e %[3]q ]; then
    echo "config region path is %[1]s" >&2
  else
    echo "preflight crash" >&2
  fi
  exit 1
fi
: > %[3]q
exec %[2]q
`, region, server, started), 0o700)
	writeFile(t, filepath.Join(dir, "night.env"), "REGION_STORE_PATH="+region+"\n", 0o600)
	batch := filepath.Join(dir, "night.yaml")
	writeFile(t, batch, fmt.Sprintf(`version: 1
name: names
state_dir: ./state
env_file: ./night.env
agent: {command: %q}
defaults: {timeout: 2m, retries: 0, on_unhealthy: run}
health: {backoff: 20ms, max_backoff: 40ms, probe_timeout: 5s, prewarm_timeout: 10s, max_hold: 0s}   # the deny reason is what is checked, not a hold
servers:
  alpha: {command: %q}
jobs:
  - {name: alpha, servers: [alpha], allowed_tools: [mcp__alpha], prompt: %q}
`, testkit.ClaudeBinOf(t, version), alpha, "SESSION alpha\nCALL mcp__alpha__echo {\"message\":\"a\"}"), 0o600)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + api.URL(),
		"ANTHROPIC_API_KEY=sk-ant-test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "MCP_CONNECT_TIMEOUT_MS=30000"}
	cmd := exec.Command(bin, "run", batch)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("nightwatch run: %v\n%s", err, out)
	}
	a := api.SessionToolResults("alpha")
	if len(a) != 1 || !a[0].IsError || !strings.Contains(a[0].Content, `nightwatch: MCP server "alpha" is`) {
		t.Fatalf("alpha: want nightwatch's deny reason, got %+v\n%s", a, out)
	}
	t.Logf("the model read: %s", a[0].Content)
	if strings.Contains(a[0].ModelSaw(), region) {
		t.Errorf("the model's deny reason holds env_file's REGION_STORE_PATH: %s", a[0].ModelSaw())
	}
	if !strings.Contains(a[0].Content, "region path is [REDACTED]") {
		t.Errorf("the deny reason does not quote the hook's probe (redacted); the test proves nothing: %q", a[0].Content)
	}
	state := filepath.Join(dir, "state")
	for _, f := range []string{"cache.json", "events.jsonl"} {
		if data := readFile(t, filepath.Join(state, f)); strings.Contains(data, region) {
			t.Errorf("%s holds env_file's REGION_STORE_PATH: %s", f, data)
		}
	}
	if strings.Contains(string(out), region) {
		t.Errorf("the console holds env_file's REGION_STORE_PATH:\n%s", out)
	}
}
