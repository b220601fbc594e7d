package launch

import (
	"fmt"
	"syscall"
)

func execve(path string, argv, env []string) error {
	// Same pid, same process group, same pipes: to Claude Code the server
	// is the process it started, and its kill reaches the server.
	if err := syscall.Exec(path, argv, env); err != nil {
		return fmt.Errorf("exec-server: exec %s: %w", path, err)
	}
	return nil
}
