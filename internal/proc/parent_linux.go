package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// DieWithParent has the kernel kill cmd when the process that started it
// dies, even by SIGKILL: a cluster worker's session must not go on after
// the worker is gone, or the attempt River runs again elsewhere would do
// the job twice. (Linux delivers it when the starting thread exits; Go's
// runtime keeps a thread alive unless a goroutine locked to it exits,
// which nightwatch never does.)
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// ErrParentGone is BindToParent's answer when the parent died before the
// binding held: the caller must exit, not become an orphan.
var ErrParentGone = errors.New("the parent process is gone")

// BindToParent is DieWithParent for this process, for one that is about to
// exec (exec-server becoming a session's stdio MCP server): when the
// process that started it dies, even by SIGKILL, the kernel kills this one
// (PR_SET_PDEATHSIG, kept across execve).
//
// The setting belongs to the calling thread, and execve keeps only the
// thread that calls it: BindToParent locks the calling goroutine to its
// thread and never unlocks it, so the exec that follows on the same
// goroutine carries the setting into the new program. (The "parent" the
// kernel watches is the thread of the parent that started this process;
// Claude Code spawns its servers from its main thread, which lives as long
// as it does.) A parent that died before the setting took effect is seen
// by getppid no longer naming it: ErrParentGone.
func BindToParent() error {
	parent := os.Getppid()
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("set the parent-death signal: %w", err)
	}
	if os.Getppid() != parent {
		return ErrParentGone
	}
	return nil
}

// OnParentExit binds this process to its parent (BindToParent): the kernel
// kills it when the parent dies, so gone is never called. stop does
// nothing. exec-server calls it on its main goroutine, which lives as long
// as the process.
func OnParentExit(gone func()) (stop func(), err error) {
	if err := BindToParent(); err != nil {
		return nil, err
	}
	return func() {}, nil
}
