//go:build windows

package command_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/command"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// TestBatchFileRunsThroughComSpec runs a real .cmd found by its bare name
// through PATHEXT and checks the arguments it received.
func TestBatchFileRunsThroughComSpec(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "echoargs.cmd")
	if err := os.WriteFile(script, []byte("@echo off\r\necho [%~1][%~2][%~3]\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+dir+";"+os.Getenv("PATH"))
	cmd := command.CommandContext(context.Background(), env, "echoargs", "plain", "with space", "a=b")
	if cmd.SysProcAttr == nil || !strings.Contains(cmd.SysProcAttr.CmdLine, "/d /s /c") {
		t.Fatalf("no raw cmd.exe command line: %#v", cmd.SysProcAttr)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "[plain][with space][a=b]" {
		t.Errorf("the batch file got %s", got)
	}
	refused := command.CommandContext(context.Background(), env, "echoargs", "x&echo INJECTED")
	if !errors.Is(refused.Err, command.ErrUnsafe) {
		t.Fatalf("Err = %v", refused.Err)
	}
	if out, err := refused.CombinedOutput(); err == nil || strings.Contains(string(out), "INJECTED") {
		t.Errorf("an unsafe batch command ran: %v %s", err, out)
	}
}

func TestExeRunsDirectly(t *testing.T) {
	cmd := command.CommandContext(context.Background(), nil, "cmd", "/c", "exit 3")
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.CmdLine != "" {
		t.Errorf("an .exe got a raw command line: %s", cmd.SysProcAttr.CmdLine)
	}
	if !strings.EqualFold(filepath.Ext(cmd.Path), ".exe") {
		t.Errorf("cmd resolved to %s", cmd.Path)
	}
}

// TestBatchFileInItsJob: the cmd.exe command line survives proc.Prepare
// (which adds CREATE_NEW_PROCESS_GROUP to the same SysProcAttr) and the
// batch file runs in its Job Object; cancelling ends it within the grace.
func TestBatchFileInItsJob(t *testing.T) {
	dir := t.TempDir()
	// The batch file runs ten minutes: only the cancel can end it before.
	if err := os.WriteFile(filepath.Join(dir, "slow.cmd"), []byte("@echo off\r\necho started %~1\r\nping -n 600 127.0.0.1 >nul\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+dir+";"+os.Getenv("PATH"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := command.CommandContext(ctx, env, "slow", "x y")
	var out lockedBuilder // read below while the copy goroutine writes
	cmd.Stdout = &out
	proc.Prepare(cmd, 500*time.Millisecond)
	if cmd.SysProcAttr.CmdLine == "" {
		t.Fatal("proc.Prepare dropped the raw command line")
	}
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	// Cancel once the batch file is running (it printed its line), not
	// after a fixed time a busy machine may not have started it in.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), "started") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	waited := make(chan struct{})
	go func() { _ = proc.Wait(cmd); close(waited) }()
	select {
	case <-waited:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the batch file ran on after the cancel (two minutes: a hang)")
	}
	if !strings.Contains(out.String(), "started x y") {
		t.Errorf("output %q", out.String())
	}
}

// lockedBuilder is a strings.Builder that may be read while written.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
