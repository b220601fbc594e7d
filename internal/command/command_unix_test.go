//go:build !windows

package command

import (
	"context"
	"testing"
)

// TestCommandContextHere: on this platform the command is os/exec's own.
func TestCommandContextHere(t *testing.T) {
	cmd := CommandContext(context.Background(), nil, "sh", "-c", "exit 0")
	if cmd.Err != nil || cmd.Args[0] != "sh" || cmd.SysProcAttr != nil {
		t.Errorf("%#v", cmd)
	}
	if err := cmd.Run(); err != nil {
		t.Error(err)
	}
}
