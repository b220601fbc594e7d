package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// exec-server becomes the server with the base environment and the kept
// names only: another server's key and the agent's key do not reach it,
// and the server's own flags pass through untouched.
func TestExecServerScrubsTheEnvironment(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	cmd := exec.Command(bin, "exec-server", "--keep", "NOTES_API_KEY", "--", "sh", "-c", `env; echo "args: $*"`, "sh", "--keep", "-x")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "NOTES_API_KEY=notes-own-key",
		"SEARCH_TOKEN=another-servers-token", "ANTHROPIC_API_KEY=sk-ant-agent-key", "DB_PASSWORD=from-env-file"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("exec-server: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, want := range []string{"NOTES_API_KEY=notes-own-key", "PATH=/usr/bin:/bin", "HOME=/tmp", "args: --keep -x"} {
		if !slices.Contains(lines, want) {
			t.Errorf("the server's view lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"another-servers-token", "sk-ant-agent-key", "from-env-file"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("the server sees %q:\n%s", secret, out)
		}
	}
}

func TestExecServerExitCodes(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"exec-server", "--", "sh", "-c", "exit 3"}, 3},
		{[]string{"exec-server", "--", "/nonexistent/server"}, 2},
		{[]string{"exec-server", "--keep", "A B", "--", "true"}, 2},
		{[]string{"exec-server", "--restarts", "-1", "--", "true"}, 2},
		{[]string{"exec-server", "--hang-after", "-1s", "--", "true"}, 2},
		{[]string{"exec-server", "--restarts", "0", "--window", "1m", "--no-hang-check", "--ping-timeout", "5s", "--", "true"}, 0},
	} {
		err := exec.Command(bin, c.args...).Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != c.code {
			t.Errorf("%q: exit %d, want %d", c.args, code, c.code)
		}
	}
}

// exec-server keeps its server alive: a server that dies mid-call is
// started again with the same least-privilege environment, the call gets
// the restart error, and once its restarts are spent exec-server exits and
// the loss is in the events file with the attempt the session runs.
func TestExecServerRestartsThenLosesItsServer(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	server := testkit.BuildTestServer(t)
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "exec-server", "--server", "notes", "--keep", "NOTES_API_KEY", "--restarts", "1", "--", server)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "NOTES_API_KEY=notes-own-key",
		"SEARCH_TOKEN=another-servers-token", "NIGHTWATCH_EVENTS=" + events,
		"NIGHTWATCH_SESSION_DIR=" + filepath.Join(dir, "runs", "r1", "jobA", "attempt-2")}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	id := 0
	rpc := func(method string, params any) map[string]any {
		t.Helper()
		id++
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatalf("write: %v", err)
		}
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("exec-server closed its output waiting for %s: %v", method, err)
			}
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && m["id"] == float64(id) {
				return m
			}
		}
	}
	text := func(m map[string]any) string { b, _ := json.Marshal(m); return string(b) }
	if m := rpc("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}}); m["error"] != nil {
		t.Fatalf("initialize: %s", text(m))
	}
	_, _ = stdin.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	env := func(name string) string {
		return text(rpc("tools/call", map[string]any{"name": "env", "arguments": map[string]any{"name": name}}))
	}
	check := func(when string) {
		if got := env("NOTES_API_KEY"); !strings.Contains(got, "notes-own-key") {
			t.Errorf("%s: the server lacks its own key: %s", when, got)
		}
		for _, name := range []string{"SEARCH_TOKEN", "NIGHTWATCH_EVENTS"} {
			if got := env(name); !strings.Contains(got, "is not set") {
				t.Errorf("%s: the server sees %s: %s", when, name, got)
			}
		}
	}
	check("first start")
	die := rpc("tools/call", map[string]any{"name": "die", "arguments": map[string]any{}})
	if !strings.Contains(text(die), "nightwatch restarted MCP server") {
		t.Fatalf("die: %s", text(die))
	}
	check("after the restart")
	if lost := rpc("tools/call", map[string]any{"name": "die", "arguments": map[string]any{}}); !strings.Contains(text(lost), "could not be brought back") {
		t.Errorf("second die: %s", text(lost))
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exec-server ended %v, want exit 1", err)
	}
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev healthcheck.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("events line %q: %v", line, err)
		}
		if ev.Run != "r1" || ev.Job != "jobA" || ev.Attempt != 2 || ev.Server != "notes" {
			t.Errorf("event without the attempt's identity: %s", line)
		}
		kinds = append(kinds, ev.Kind)
	}
	want := []string{healthcheck.EventServerStarted, healthcheck.EventServerRestarted, healthcheck.EventServerStarted, healthcheck.EventServerLost}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %q, want %q", kinds, want)
	}
}

// A server's restart: {max: 0} reaches exec-server as --restarts 0: its
// first death mid-session is final (lost), not repaired.
func TestExecServerRestartsZeroNeverRestarts(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	server := testkit.BuildTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "exec-server", "--server", "notes", "--restarts", "0", "--no-hang-check", "--", server)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	rpc := func(id int, method string, params any) string {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatalf("write: %v", err)
		}
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("exec-server closed its output waiting for %s: %v", method, err)
			}
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && m["id"] == float64(id) {
				return string(line)
			}
		}
	}
	rpc(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}})
	_, _ = stdin.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	if got := rpc(2, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "up"}}); !strings.Contains(got, "up") {
		t.Fatalf("echo: %s", got)
	}
	if got := rpc(3, "tools/call", map[string]any{"name": "die", "arguments": map[string]any{}}); !strings.Contains(got, "could not be brought back") {
		t.Errorf("die with --restarts 0: %s, want the loss", got)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exec-server ended %v, want exit 1 (lost)", err)
	}
}
