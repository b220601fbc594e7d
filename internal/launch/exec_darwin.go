package launch

import (
	"fmt"
	"os"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// execve runs the server bound to the process that started exec-server
// (Claude Code): macOS has no parent-death signal, and a process that
// execs cannot watch its parent, so exec-server stays as the server's
// parent, in the session's process group, passes Claude's signals on, and
// kills the group when Claude exits (proc.RunBound). It exits with the
// server's code.
func execve(path string, argv, env []string) error {
	code, err := proc.RunBound(path, argv, env)
	if err != nil {
		return fmt.Errorf("exec-server: %s: %w", path, err)
	}
	os.Exit(code)
	return nil
}
