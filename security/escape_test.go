package security_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

// escapingServer writes a stdio MCP server that first starts a process in a
// session of its own (setsid: out of reach of its process group's kill),
// appending that process's pid to pidFile, and then becomes the real test
// server. Every start (a probe, preflight, a session) leaves one such
// process unless nightwatch finds and kills it.
func escapingServer(t *testing.T, dir, pidFile string) string {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Fatalf("setsid is needed for this attack: %v", err)
	}
	path := filepath.Join(dir, "escaping-server")
	writeFile(t, path, fmt.Sprintf(`#!/bin/sh
setsid sleep 300 </dev/null >/dev/null 2>&1 &
echo $! >> %q
exec %q "$@"
`, pidFile, testkit.BuildTestServer(t)), 0o700)
	return path
}

// escapedAlive lists the recorded pids that are still running processes.
func escapedAlive(t *testing.T, pidFile string) (started int, alive []int) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the escaping server never started: %v", err)
	}
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		started++
		t.Cleanup(func() {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		})
		if processRunning(pid) {
			alive = append(alive, pid)
		}
	}
	return started, alive
}

func processRunning(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func requireNoEscapees(t *testing.T, what, pidFile string) {
	t.Helper()
	// The kill is sent before the owner returns; give the kernel a moment
	// to finish it.
	deadline := time.Now().Add(2 * time.Second)
	for {
		started, alive := escapedAlive(t, pidFile)
		if len(alive) == 0 {
			t.Logf("%s: %d escaping processes started, none left", what, started)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d processes that left their group outlived their owner: %v", what, len(alive), started, alive)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A hook that probes a server whose process detaches a child: once the
// hook has answered, nothing it started is left.
func TestHookProbeLeavesNoEscapedProcess(t *testing.T) {
	e := newHookEnv(t)
	pidFile := filepath.Join(e.Home, "pids")
	server := escapingServer(t, e.Home, pidFile)
	e.Config = filepath.Join(e.Home, "mcp.json")
	writeFile(t, e.Config, fmt.Sprintf(`{"mcpServers":{"esc":{"command":%q}}}`, server), 0o600)
	if r := runHook(t, e, strings.NewReader(preIn("mcp__esc__echo", `{}`, e.Home))); r.Code != 0 {
		t.Fatalf("hook: exit %d (want 0: the server is healthy): %s", r.Code, r.Stderr)
	}
	requireNoEscapees(t, "hook probe", pidFile)
}

// A real night through the real CLI: preflight probes the server, each
// session's Claude Code starts it again; at the end of the night no process
// any of them detached is left.
func TestNightLeavesNoEscapedProcess(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		bin := testkit.BuildNightwatch(t)
		api := fakeapi.Start(t)
		dir := t.TempDir()
		home := filepath.Join(dir, "home")
		if err := os.MkdirAll(home, 0o700); err != nil {
			t.Fatal(err)
		}
		pidFile := filepath.Join(dir, "pids")
		server := escapingServer(t, dir, pidFile)
		batch := filepath.Join(dir, "night.yaml")
		writeFile(t, batch, fmt.Sprintf(`version: 1
name: escapes
state_dir: ./state
agent: {command: %q}
defaults: {timeout: 2m, retries: 0}
servers:
  esc: {command: %q}
jobs:
  - {name: one, servers: [esc], allowed_tools: [mcp__esc], prompt: %q}
  - {name: two, servers: [esc], allowed_tools: [mcp__esc], prompt: %q}
`, testkit.ClaudeBinOf(t, version), server,
			"SESSION one\nCALL mcp__esc__echo {\"message\":\"1\"}",
			"SESSION two\nCALL mcp__esc__echo {\"message\":\"2\"}"), 0o600)
		cmd := exec.Command(bin, "run", batch)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + api.URL(),
			"ANTHROPIC_API_KEY=test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("nightwatch run: %v\n%s", err, out)
		}
		if started, _ := escapedAlive(t, pidFile); started < 3 {
			t.Fatalf("the server started %d times, want at least 3 (preflight and two sessions)\n%s", started, out)
		}
		requireNoEscapees(t, "night", pidFile)
	})
}
