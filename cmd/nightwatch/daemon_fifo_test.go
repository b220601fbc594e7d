//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// A FIFO where the health cache should be: the real `nightwatch daemon`
// runs its night without waiting on it (refused at once, with its path)
// and still stops on SIGTERM. Before: the night's first cache read waited
// on the FIFO forever, and SIGTERM waited for that night.
func TestDaemonStopsOnSIGTERMWithAFIFOForTheCache(t *testing.T) {
	bin := testkit.BuildNightwatch(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(state, "cache.json"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	agent := filepath.Join(dir, "agent")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"num_turns\":1,\"total_cost_usd\":0,\"session_id\":\"s\"}'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	batch := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf(`version: 1
name: fifo
state_dir: ./state
schedule: "@every 1s"
agent: {command: %s}
servers:
  notes: {command: %s}
jobs:
  - {name: a, servers: [notes], prompt: a}
`, q(agent), q(testkit.BuildTestServer(t)))
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "daemon", batch)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	var out lockedBuffer // the daemon writes while the test reads
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Let the night start and reach the cache: it says so, naming the
	// FIFO (a minute is for a busy machine; a night that waited on the
	// FIFO never says it).
	deadline := time.Now().Add(time.Minute)
	for !(strings.Contains(out.String(), "night starting") && strings.Contains(out.String(), "FIFO")) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	// A daemon that waited on the FIFO would never stop: two minutes is a
	// hang, not a slow machine.
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the daemon ignored SIGTERM with a FIFO for the cache:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "night starting") {
		t.Fatalf("no night started:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "FIFO") || !strings.Contains(out.String(), filepath.Join(state, "cache.json")) {
		t.Errorf("the FIFO was not named:\n%s", out.String())
	}
}

// `nightwatch logs` with a FIFO where the newest run's log should be:
// refused at once, naming it. Before: it waited on the FIFO.
func TestLogsRefusesAFIFO(t *testing.T) {
	c := newCLI(t)
	state := filepath.Join(c.cwd, "state")
	if err := os.MkdirAll(filepath.Join(state, "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(state, "logs", "20261201T020000Z-abcd.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan struct{})
	var stderr string
	var code int
	go func() { _, stderr, code = c.run("logs", "--state-dir", state); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a wait on a FIFO is forever
		t.Fatal("nightwatch logs waited on a FIFO")
	}
	if code == 0 || !strings.Contains(stderr, fifo) || !strings.Contains(stderr, "FIFO") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// lockedBuffer is a bytes.Buffer a child process writes while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
