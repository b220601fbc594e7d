// Package proc is the one place nightwatch starts child processes: every
// child runs in its own process group, is bounded by a context, and is
// killed with its whole group, so no grandchild (an npx-spawned server, a
// shell's child) outlives its owner. On Linux a descendant that left the
// group (setsid, a double fork) is found by a marker in its environment
// and killed too (see escaped_linux.go).
package proc

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// Prepare puts cmd in a new process group and arranges for cancellation of
// the command's context to send SIGTERM to that whole group; if the leader
// has not exited grace later, the standard library kills it and closes its
// pipes. Call Wait (not cmd.Wait) so the rest of the group is killed too.
//
// cmd must have been made with exec.CommandContext.
func Prepare(cmd *exec.Cmd, grace time.Duration) {
	prepare(cmd, grace)
	mark(cmd)
}

// PrepareAllowDaemons is Prepare for a command whose purpose may be to start
// a long-lived process outside its group (a reconnect command that runs
// `setsid server` or asks pm2 to): the group is still killed, but a
// descendant that detached itself into a session of its own is left alone.
// The command carries no spawn mark, not even the ones this process
// inherited, so a server it restarts is nobody's descendant to kill: a
// reconnect run by a hook inside a session must not die with the session.
func PrepareAllowDaemons(cmd *exec.Cmd, grace time.Duration) {
	prepare(cmd, grace)
	unmark(cmd)
}

func prepare(cmd *exec.Cmd, grace time.Duration) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error {
		signalGroup(cmd, syscall.SIGTERM)
		return nil
	}
	if grace <= 0 {
		grace = time.Millisecond
	}
	// WaitDelay also stops Wait from hanging on a grandchild that still
	// holds stdout or stderr open after the leader exited.
	cmd.WaitDelay = grace
}

// Wait waits for cmd and then kills whatever is left of its process group:
// a server started through a wrapper (npx, a shell) leaves children that
// would otherwise keep running after the leader is gone.
func Wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	KillGroup(cmd)
	killEscaped(cmd)
	return err
}

// Terminate asks the whole group to stop now (SIGTERM); Wait finishes it.
func Terminate(cmd *exec.Cmd) { signalGroup(cmd, syscall.SIGTERM) }

// KillGroup sends SIGKILL to the child's whole process group.
func KillGroup(cmd *exec.Cmd) { signalGroup(cmd, syscall.SIGKILL) }

func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil || cmd.Process.Pid <= 0 {
		return
	}
	// ESRCH (the group is gone already) is the expected answer after a
	// clean exit; nothing to report.
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}

// GroupAlive reports whether any process of the group pgid remains.
func GroupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ExitDescription says in words how a finished command ended, for reasons
// shown to operators ("exit status 3", "killed by signal: terminated").
func ExitDescription(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal: " + ws.Signal().String()
		}
		return ee.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}
