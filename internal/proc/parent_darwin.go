package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// DieWithParent is Linux's parent-death signal, which macOS lacks; a
// session left by a dead worker is ended by the next worker on its host
// (cluster/queue), which kills the process groups the dead one recorded.
func DieWithParent(*exec.Cmd) {}

// ErrParentGone is RunBound's answer when the parent died before the
// watch on it held.
var ErrParentGone = errors.New("the parent process is gone")

// RunBound is how exec-server runs a session's stdio server on macOS, which
// has no parent-death signal: the server runs as a child in this process's
// own process group (the session's, so the session's group kill reaches
// it), with this process's stdin, stdout and stderr; SIGINT, SIGTERM and
// SIGHUP sent to this process (Claude Code closes a server with SIGINT)
// are passed on to it; and when the parent of this process (Claude Code)
// exits, a kqueue watch on it (EVFILT_PROC, NOTE_EXIT) kills the whole
// process group at once: the server, anything it started in the group,
// and this process. path and argv are the server's program and its argv
// (argv[0] as given), env its whole environment. It returns the server's
// exit code.
func RunBound(path string, argv, env []string) (int, error) {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args, cmd.Env = argv, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	parent := os.Getppid()
	kq, err := unix.Kqueue()
	if err != nil {
		return -1, fmt.Errorf("watch the parent: %w", err)
	}
	defer unix.Close(kq)
	var ev unix.Kevent_t
	unix.SetKevent(&ev, parent, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		// ESRCH: the parent is gone already.
		return -1, ErrParentGone
	}
	if os.Getppid() != parent {
		return -1, ErrParentGone
	}
	// Not Prepare: the server must stay in the session's group.
	if err := cmd.Start(); err != nil {
		return -1, err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		out := make([]unix.Kevent_t, 1)
		for {
			n, err := unix.Kevent(kq, nil, out, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n < 1 {
				return // the watch is closed: RunBound returned
			}
			// Claude Code is gone: nothing of its session may go on.
			_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
			return
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}
