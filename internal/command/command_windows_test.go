//go:build windows

package command_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
	if err := os.WriteFile(filepath.Join(dir, "slow.cmd"), []byte("@echo off\r\necho started %~1\r\nping -n 30 127.0.0.1 >nul\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+dir+";"+os.Getenv("PATH"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := command.CommandContext(ctx, env, "slow", "x y")
	var out strings.Builder
	cmd.Stdout = &out
	proc.Prepare(cmd, 500*time.Millisecond)
	if cmd.SysProcAttr.CmdLine == "" {
		t.Fatal("proc.Prepare dropped the raw command line")
	}
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	cancel()
	_ = proc.Wait(cmd)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the batch file ran on for %v after the cancel", d)
	}
	if !strings.Contains(out.String(), "started x y") {
		t.Errorf("output %q", out.String())
	}
}
