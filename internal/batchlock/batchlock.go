// Package batchlock holds one night per batch at a time: the batch's
// lock file in its state folder (flock(2), released by the kernel when its
// holder dies) and the holder's pid beside it.
package batchlock

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gofrs/flock"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
)

// ErrLocked means another process is running the batch.
var ErrLocked = errors.New("another nightwatch process is running this batch")

// LockedError says which lock is held and, when known, by which process.
// errors.Is(err, ErrLocked) is true for it.
type LockedError struct {
	Batch string
	Path  string
	PID   int // 0 when the holder could not be identified
}

func (e *LockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("batch %q: %v (pid %d holds %s)", e.Batch, ErrLocked, e.PID, e.Path)
	}
	return fmt.Sprintf("batch %q: %v (%s is held)", e.Batch, ErrLocked, e.Path)
}

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Take takes the batch's lock, <stateDir>/<name>.lock, without
// waiting: a launchd start and a manual start of the same night must not
// both run it, and the second should say so at once rather than queue up.
// The lock is flock(2): the kernel releases it when its holder dies, even
// by SIGKILL, so a crash never leaves a stale lock. The holder's pid goes
// into <name>.lock.pid, only to tell the loser who holds it.
func Take(stateDir, batchName string) (unlock func(), err error) {
	if batchName == "" || strings.ContainsAny(batchName, `/\`) || batchName == "." || batchName == ".." {
		return nil, fmt.Errorf("lock batch: invalid batch name %q", batchName)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("lock batch %q: %w", batchName, err)
	}
	path := statedir.Lock(stateDir, batchName)
	pidPath := path + ".pid"
	// flock opens with O_CREATE, which would create a planted symlink's
	// target: create the file here, never through a link.
	if err := atomicfile.EnsureFile(path); err != nil {
		return nil, fmt.Errorf("lock batch %q: %w", batchName, err)
	}
	lk := flock.New(path, flock.SetPermissions(atomicfile.Mode))
	ok, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock batch %q: %w", batchName, err)
	}
	if !ok {
		return nil, &LockedError{Batch: batchName, Path: path, PID: holderPID(pidPath)}
	}
	if err := atomicfile.WriteFile(pidPath, []byte(strconv.Itoa(os.Getpid())+"\n"), atomicfile.Mode); err != nil {
		_ = lk.Unlock()
		return nil, fmt.Errorf("lock batch %q: record pid: %w", batchName, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			// Remove the pid before unlocking: once unlocked, the next
			// holder may already have written its own.
			_ = os.Remove(pidPath)
			_ = lk.Unlock()
		})
	}, nil
}

// holderPID reads the pid sidecar. A holder that has the lock but has not
// yet written its pid may leave the previous (dead) holder's pid there, so
// a pid whose process is gone is not reported.
func holderPID(pidPath string) int {
	b, err := atomicfile.Read(pidPath, 64)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	if !proc.Alive(pid) {
		return 0
	}
	return pid
}

// Holder is the pid of the process that runs the batch now (the
// holder of its lock, by the pid it wrote beside it), or 0 when none
// does. It never takes the lock itself: a night starting at that moment
// must not find it held by an onlooker.
func Holder(stateDir, batchName string) int {
	return holderPID(statedir.Lock(stateDir, batchName) + ".pid")
}
