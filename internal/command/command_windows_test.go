//go:build windows

package command

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	cmd := CommandContext(context.Background(), env, "echoargs", "plain", "with space", "a=b")
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
	refused := CommandContext(context.Background(), env, "echoargs", "x&echo INJECTED")
	if !errors.Is(refused.Err, ErrUnsafe) {
		t.Fatalf("Err = %v", refused.Err)
	}
	if out, err := refused.CombinedOutput(); err == nil || strings.Contains(string(out), "INJECTED") {
		t.Errorf("an unsafe batch command ran: %v %s", err, out)
	}
}

func TestExeRunsDirectly(t *testing.T) {
	cmd := CommandContext(context.Background(), nil, "cmd", "/c", "exit 3")
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.CmdLine != "" {
		t.Errorf("an .exe got a raw command line: %s", cmd.SysProcAttr.CmdLine)
	}
	if !strings.EqualFold(filepath.Ext(cmd.Path), ".exe") {
		t.Errorf("cmd resolved to %s", cmd.Path)
	}
}
