//go:build windows

package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// execve runs the server as a child in a kill-on-close Job Object of its
// own (proc.Prepare), so it dies with exec-server; and exec-server, started
// by Claude Code, is in the Job Object of Claude's session, which the
// session's owner holds: when Claude's session is ended, or its owner
// dies, the system kills the whole tree, this server included.
func execve(path string, argv, env []string) error {
	cmd := proc.Command(context.Background(), env, 2*time.Second, path, argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := proc.Start(cmd); err != nil {
		return fmt.Errorf("exec-server: start %s: %w", path, err)
	}
	err := proc.Wait(cmd)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("exec-server: %s: %w", path, err)
	}
	os.Exit(0)
	return nil
}
