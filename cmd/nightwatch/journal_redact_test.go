package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// A session whose stderr tail holds a secret (an env_file value of a plain
// name, and a sensitive-named one): the job's failure reason is written to
// the journal redacted, whoever built the event. Before: journal.Append
// wrote the reason as the supervisor handed it, stderr tail and all.
func TestJournalRedactsASessionsStderrTail(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake agent is a shell script")
	}
	const plain, key = "plainStderrQ4w7E1r3T6y9", "keyStderrZ2x5C8v1B4n7"
	bin := testkit.BuildNightwatch(t)
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent")
	if err := os.WriteFile(agent, []byte(fmt.Sprintf("#!/bin/sh\necho \"fatal: cannot reach store %s with %s\" >&2\nexit 3\n", plain, key)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "night.env"), []byte("STORE_LOCATION="+plain+"\nSTORE_API_KEY="+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	batch := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf(`version: 1
name: stderr
state_dir: ./state
env_file: ./night.env
agent: {command: %s}
defaults: {retries: 0}
servers:
  notes: {command: %s}
jobs:
  - {name: a, servers: [notes], prompt: a}
`, q(agent), q(testkit.BuildTestServer(t)))
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", batch)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	out, _ := cmd.CombinedOutput()
	journals, _ := filepath.Glob(filepath.Join(dir, "state", "runs", "*.jsonl"))
	if len(journals) != 1 {
		t.Fatalf("want one journal, got %v\n%s", journals, out)
	}
	data, err := os.ReadFile(journals[0])
	if err != nil {
		t.Fatal(err)
	}
	for name, secret := range map[string]string{"env_file's STORE_LOCATION": plain, "env_file's STORE_API_KEY": key} {
		if strings.Contains(string(data), secret) {
			t.Errorf("the journal holds %s:\n%s", name, data)
		}
	}
	if !strings.Contains(string(data), "cannot reach store [REDACTED]") {
		t.Errorf("the journal does not quote the stderr tail (redacted); the test proves nothing:\n%s", data)
	}
}
