package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// run --dry-run prints each job's exact command, its allowed tools, its
// MCP config and its environment's names, with no secret in it, and starts
// and writes nothing.
func TestRunDryRun(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	dir := t.TempDir()
	started := filepath.Join(dir, "agent-started")
	agent := filepath.Join(dir, "claude")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\ntouch "+started+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	batch := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf(`version: 1
name: dry
state_dir: ./state
agent: {command: %s}
env: {SEARCH_TOKEN: "st-very-secret-1234"}
servers:
  notes: {command: %s, env: {NOTES_KEY: "nk-also-secret-9876"}}
  search: {type: http, url: "https://search.example/mcp", headers: {Authorization: "Bearer ${SEARCH_TOKEN}"}}
jobs:
  - {name: a, servers: [notes, search], prompt: "summarize"}
  - {name: b, servers: [notes], allowed_tools: [mcp__notes__echo], prompt: "echo", verify: [%s, check]}
`, q(agent), q(testkit.BuildTestServer(t)), q(agent))
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", batch, "--dry-run")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run --dry-run: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{
		"job a", "'-p' 'summarize'", "--strict-mcp-config", "'--allowedTools' 'mcp__notes' 'mcp__search'",
		"allowed tools: mcp__notes, mcp__search (from its servers)",
		"job b", "allowed tools: mcp__notes__echo (from its allowed_tools)", "verify: " + agent + " check",
		"environment: ", "MCP_CONNECTION_NONBLOCKING", `"url": "https://search.example/mcp"`,
		// search's token stays out of job a's session, and of b's (issue 21).
		"left out for the servers only (session_env keeps one): SEARCH_TOKEN",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("dry run lacks %q:\n%s", want, s)
		}
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "environment:") && strings.Contains(line, "SEARCH_TOKEN") {
			t.Errorf("a session's environment has search's variable: %s", line)
		}
	}
	for _, secret := range []string{"st-very-secret-1234", "nk-also-secret-9876"} {
		if strings.Contains(s, secret) {
			t.Errorf("dry run shows a secret %q:\n%s", secret, s)
		}
	}
	if _, err := os.Stat(started); err == nil {
		t.Errorf("the agent ran")
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); err == nil {
		t.Errorf("the dry run created the state folder")
	}
}

// status, probe and reset given a batch file work on that batch's cache
// and servers, from any folder.
func TestOperatorCommandsTakeABatch(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	dir := t.TempDir()
	batch := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf("version: 1\nname: ops\nstate_dir: ./state\nservers:\n  notes: {command: %s}\n  dead: {type: http, url: \"http://127.0.0.1:1/mcp\"}\n"+
		"jobs:\n  - {name: a, servers: [notes, dead], prompt: hi}\n", q(testkit.BuildTestServer(t)))
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + elsewhere}
		cmd.Dir = elsewhere
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	cache := filepath.Join(dir, "state", "cache.json")
	out, code := run("probe", batch)
	if code != 1 || !strings.Contains(out, "notes") || !strings.Contains(out, "dead") {
		t.Errorf("probe night.yaml: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(cache); err != nil {
		t.Errorf("probe night.yaml did not record in the batch's cache: %v", err)
	}
	out, code = run("status", batch)
	if code != 0 || !strings.Contains(out, "cache: "+cache) || !strings.Contains(out, batch) || !strings.Contains(out, "unhealthy") {
		t.Errorf("status night.yaml: exit %d\n%s", code, out)
	}
	out, code = run("reset", batch, "dead")
	if code != 0 || !strings.Contains(out, "reset: dead") {
		t.Errorf("reset night.yaml dead: exit %d\n%s", code, out)
	}
	out, _ = run("status", batch)
	if strings.Contains(out, "unhealthy") {
		t.Errorf("after the reset:\n%s", out)
	}
}
