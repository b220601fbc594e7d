// Package proc is the one place nightwatch starts child processes: every
// child runs in a group of its own (a process group on Unix, a Job Object
// on Windows), is bounded by a context, and is killed with its whole group,
// so no grandchild (an npx-spawned server, a shell's child) outlives its
// owner. On Linux a descendant that left the group (setsid, a double fork)
// is killed too: in a child subreaper (Subreaper, the night) it is one of
// this process's own children once its parent is gone, and is attributed
// to its spawn (subreaper_linux.go); elsewhere it is found by a marker in
// its environment (escaped_linux.go).
//
// The rule is the same on every platform: cancelling the command's context
// asks the group to stop (SIGTERM; CTRL_BREAK on Windows), and grace later
// the group is killed.
package proc

import (
	"context"
	"errors"
	"os/exec"
	"sync"
	"time"
)

// Prepare puts cmd in a new group and arranges for cancellation of the
// command's context to ask that whole group to stop; if the leader has not
// exited grace later, the group is killed and the command's pipes closed.
// Start it with Start and wait for it with Wait (not cmd.Start, cmd.Wait),
// so the group exists from the first instruction and is killed at the end.
//
// cmd must have been made with exec.CommandContext.
func Prepare(cmd *exec.Cmd, grace time.Duration) {
	prepare(cmd, grace)
	marking.Store(cmd, true)
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
	marking.Store(cmd, false)
}

// marking is, for each prepared command not started yet, whether Start
// gives it a spawn mark (true) or removes the marks it would inherit
// (false). The environment is marked at Start, not at Prepare, so that a
// caller may still set cmd.Env between the two.
var marking sync.Map // *exec.Cmd → bool

func prepare(cmd *exec.Cmd, grace time.Duration) {
	newGroup(cmd)
	cmd.Cancel = func() error {
		Terminate(cmd)
		return nil
	}
	if grace <= 0 {
		grace = time.Millisecond
	}
	// WaitDelay also stops Wait from hanging on a grandchild that still
	// holds stdout or stderr open after the leader exited.
	cmd.WaitDelay = grace
}

// StopLeaderFirst changes what cancelling a prepared cmd does: the leader
// alone is asked to stop, and the rest of its group is killed once the
// leader is gone (Wait), or with it grace later. A session's `claude` must
// end before its MCP servers do: a server that dies first fails the call
// in flight, and Claude would take that for the server's failure. On
// Windows, which can only signal a whole console group, the group is asked
// to stop at once, as with Prepare.
func StopLeaderFirst(cmd *exec.Cmd) {
	cmd.Cancel = func() error {
		TerminateLeader(cmd)
		return nil
	}
}

// Start starts a prepared cmd in its group.
func Start(cmd *exec.Cmd) error {
	if v, ok := marking.LoadAndDelete(cmd); ok {
		if v.(bool) {
			mark(cmd)
		} else {
			unmark(cmd)
		}
	}
	after := beforeStart()
	defer after()
	if err := cmd.Start(); err != nil {
		return err
	}
	joinGroup(cmd)
	registerSpawn(cmd)
	return nil
}

// Wait waits for cmd and then kills whatever is left of its group: a
// server started through a wrapper (npx, a shell) leaves children that
// would otherwise keep running after the leader is gone.
func Wait(cmd *exec.Cmd) error {
	err, _ := WaitLeft(cmd)
	return err
}

// WaitLeft is Wait that also says whether anything of the group was still
// running when the leader had been reaped (and was then killed). A command
// that exited 0 while a process it started kept its output open
// (exec.ErrWaitDelay) left that process inside its group when leftInGroup
// is true, and outside it (a daemon of its own, setsid) when false.
func WaitLeft(cmd *exec.Cmd) (err error, leftInGroup bool) {
	err = cmd.Wait()
	leftInGroup = groupAlive(cmd)
	KillGroup(cmd)
	killEscaped(cmd)
	releaseGroup(cmd)
	return err, leftInGroup
}

// ExitDescription says in words how a finished command ended, for reasons
// shown to operators ("exit status 3", "killed by signal: terminated").
func ExitDescription(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if sig, ok := signalOf(ee); ok {
			return "killed by signal: " + sig
		}
		return ee.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}
