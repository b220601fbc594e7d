//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

// openNonblocking opens path for reading with O_NONBLOCK, so that opening a
// FIFO returns at once instead of waiting for a writer. O_NONBLOCK has no
// effect on reads of a regular file.
func openNonblocking(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// noFollow is the open flag that refuses a symlink as the last path element.
const noFollow = syscall.O_NOFOLLOW

// nonBlock makes opening a FIFO return at once instead of waiting for its
// other end.
const nonBlock = syscall.O_NONBLOCK

// isLoop reports whether err is the open of a symlink that O_NOFOLLOW
// refused.
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
