//go:build windows

package atomicfile

import (
	"os"
)

// openNonblocking opens path for reading. Windows has no FIFOs in the file
// system namespace (named pipes live under \\.\pipe\), so a plain open
// cannot hang on one; Read's fstat check still refuses devices and folders.
func openNonblocking(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// noFollow is 0 on Windows: AppendLine's Lstat check refuses a symlink
// (which needs a privilege to create there) before the open.
const noFollow = 0

// nonBlock makes opening a FIFO return at once instead of waiting for its
// other end.
const nonBlock = 0

// isLoop is false on Windows: without O_NOFOLLOW an open never refuses a
// link (the Lstat before it does).
func isLoop(error) bool { return false }
