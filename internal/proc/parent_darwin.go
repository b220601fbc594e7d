package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"

	"golang.org/x/sys/unix"
)

// DieWithParent is Linux's parent-death signal, which macOS lacks; a
// session left by a dead worker is ended by the next worker on its host
// (cluster/queue), which kills the process groups the dead one recorded.
func DieWithParent(*exec.Cmd) {}

// ErrParentGone is OnParentExit's answer when the parent died before the
// watch on it held.
var ErrParentGone = errors.New("the parent process is gone")

// OnParentExit calls gone once the process that started this one (Claude
// Code, for exec-server) exits: macOS has no parent-death signal, so a
// kqueue watch on the parent (EVFILT_PROC, NOTE_EXIT) stands in for it.
// stop ends the watch.
func OnParentExit(gone func()) (stop func(), err error) {
	parent := os.Getppid()
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, fmt.Errorf("watch the parent: %w", err)
	}
	var ev unix.Kevent_t
	unix.SetKevent(&ev, parent, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); err != nil {
		unix.Close(kq)
		return nil, ErrParentGone // ESRCH: the parent is gone already
	}
	if os.Getppid() != parent {
		unix.Close(kq)
		return nil, ErrParentGone
	}
	var once sync.Once
	stop = func() { once.Do(func() { unix.Close(kq) }) }
	go func() {
		out := make([]unix.Kevent_t, 1)
		for {
			n, err := unix.Kevent(kq, nil, out, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n < 1 {
				return // the watch is closed
			}
			gone()
			return
		}
	}()
	return stop, nil
}
