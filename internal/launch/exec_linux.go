package launch

import (
	"fmt"
	"syscall"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// execve becomes the server, bound to the process that started exec-server
// (Claude Code): when that process dies, even by SIGKILL (its own
// parent-death signal when a cluster's worker is killed), the kernel kills
// the server (proc.BindToParent), so no server of a dead session goes on
// working while the attempt runs again elsewhere. Same pid, same process
// group, same pipes: to Claude Code the server is the process it started,
// and its kill and the session's group kill reach the server. A server's
// own children (npx's node) stay in the session's process group; they are
// not bound (their stdin, Claude's pipe, closes with Claude).
func execve(path string, argv, env []string) error {
	if err := proc.BindToParent(); err != nil {
		return fmt.Errorf("exec-server: %w", err)
	}
	if err := syscall.Exec(path, argv, env); err != nil {
		return fmt.Errorf("exec-server: exec %s: %w", path, err)
	}
	return nil
}
