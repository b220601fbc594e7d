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
	} {
		if !strings.Contains(s, want) {
			t.Errorf("dry run lacks %q:\n%s", want, s)
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
