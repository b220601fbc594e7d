//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// A FIFO where the events file should be: the real `nightwatch run` goes
// on with its night (the jobs run and finish) and SIGTERM stops it. Before:
// the supervisor's tail of events.jsonl opened the FIFO and waited for a
// writer forever, so the night hung after its first session and ignored
// SIGTERM.
func TestRunGoesOnWithAFIFOForTheEventsFile(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(state, "events.jsonl"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	agent := filepath.Join(dir, "agent")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"num_turns\":1,\"total_cost_usd\":0,\"session_id\":\"s\"}'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	batch := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf(`version: 1
name: fifo-events
state_dir: ./state
agent: {command: %s}
servers:
  notes: {command: %s}
jobs:
  - {name: a, servers: [notes], prompt: a}
  - {name: b, servers: [notes], prompt: b}
  - {name: c, servers: [notes], prompt: c}
`, q(agent), q(testkit.BuildTestServer(t)))
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", batch)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		// The night went on to its end.
	case <-time.After(30 * time.Second):
		// Still running: SIGTERM must stop it.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
			t.Fatalf("the night did not go on with a FIFO for events.jsonl:\n%s", out.String())
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("run ignored SIGTERM with a FIFO for events.jsonl:\n%s", out.String())
		}
	}
	if !strings.Contains(out.String(), "3 done") {
		t.Errorf("the jobs did not all run:\n%s", out.String())
	}
}
