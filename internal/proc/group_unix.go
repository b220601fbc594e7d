//go:build unix

package proc

import (
	"errors"
	"os/exec"
	"syscall"
)

func newGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// joinGroup has nothing to do on Unix: Setpgid made the group at fork.
func joinGroup(*exec.Cmd) {}

func releaseGroup(*exec.Cmd) {}

// Terminate asks the whole group to stop now (SIGTERM); Wait finishes it.
func Terminate(cmd *exec.Cmd) { signalGroup(cmd, syscall.SIGTERM) }

// TerminateLeader asks the child alone to stop (SIGTERM), not its group.
func TerminateLeader(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
}

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

func groupAlive(cmd *exec.Cmd) bool {
	return cmd.Process != nil && cmd.Process.Pid > 0 && GroupAlive(cmd.Process.Pid)
}

// GroupAlive reports whether any process of the group pgid remains.
func GroupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func signalOf(ee *exec.ExitError) (string, bool) {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String(), true
	}
	return "", false
}

// KillGroupID sends SIGKILL to the process group pgid: a session a dead
// supervisor left running, found in its journal.
func KillGroupID(pgid int) error { return syscall.Kill(-pgid, syscall.SIGKILL) }

// Alive reports whether a process pid exists (signal 0; EPERM means it
// exists as another user).
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
