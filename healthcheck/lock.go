package healthcheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
)

// ensureLockFile creates the lock file at path (0600) unless it exists,
// never through a symlink: flock opens it with O_CREATE, which would
// create a planted link's target. A symlink already there is refused.
func ensureLockFile(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symlink; refusing to lock through it", path)
	}
	// O_NONBLOCK: a FIFO planted where the lock should be is opened at
	// once (not waited on) and refused below, before flock opens it the
	// blocking way.
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, atomicfile.Mode)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &fs.PathError{Op: "lock", Path: path, Err: fmt.Errorf("%w (%s)", atomicfile.ErrNotRegular, fi.Mode().Type())}
	}
	return nil
}

func tryLock(lk *flock.Flock, timeout time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ok, err := lk.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil && ctx.Err() != nil {
		return false, nil
	}
	return ok, err
}

// ProbeLock is held by the one hook that probes a server after its backoff
// ran out; hooks for the same server wait for its verdict instead of all
// probing at once (a thundering herd on a server that is just coming back).
type ProbeLock struct{ lk *flock.Flock }

// ProbeLockPath is where the probe lock of server lives: beside the cache,
// named by a hash so that no server name can point outside the folder.
func (s *Store) ProbeLockPath(server string) string {
	sum := sha256.Sum256([]byte(server))
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, server)
	if len(safe) > 40 {
		safe = safe[:40]
	}
	return filepath.Join(s.Path+".locks", safe+"-"+hex.EncodeToString(sum[:6])+".lock")
}

// AcquireProbe takes the probe lock of server, waiting up to wait. ok is
// false when another process kept it that long.
func (s *Store) AcquireProbe(ctx context.Context, server string, wait time.Duration) (l *ProbeLock, ok bool, err error) {
	path := s.ProbeLockPath(server)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("probe lock for %s: %w", server, err)
	}
	if err := ensureLockFile(path); err != nil {
		return nil, false, fmt.Errorf("probe lock for %s: %w", server, err)
	}
	lk := flock.New(path, flock.SetPermissions(atomicfile.Mode))
	if got, err := lk.TryLock(); err != nil {
		return nil, false, fmt.Errorf("probe lock for %s: %w", server, err)
	} else if got {
		return &ProbeLock{lk}, true, nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	got, err := lk.TryLockContext(wctx, 10*time.Millisecond)
	if err != nil && wctx.Err() != nil {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("probe lock for %s: %w", server, err)
	}
	if !got {
		return nil, false, nil
	}
	return &ProbeLock{lk}, true, nil
}

// Release lets the next waiter in.
func (l *ProbeLock) Release() {
	if l != nil && l.lk != nil {
		_ = l.lk.Unlock()
	}
}
