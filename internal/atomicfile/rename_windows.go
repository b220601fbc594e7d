//go:build windows

package atomicfile

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// rename replaces newpath with oldpath (MoveFileEx with
// MOVEFILE_REPLACE_EXISTING, as os.Rename does). Windows refuses to replace
// a file another process has open without FILE_SHARE_DELETE — and Go's own
// os.Open does not share delete, so a hook reading the cache at that moment
// is enough — with ERROR_SHARING_VIOLATION or ERROR_ACCESS_DENIED (also what
// a virus scanner holding the file causes). Readers hold the file for
// milliseconds, so the rename is retried within renameBudget; if it still
// fails, WriteFile returns the error, removes its temp file, and the
// previous file stays whole.
func rename(oldpath, newpath string) error {
	return retryRename(func() error { return os.Rename(oldpath, newpath) }, renameRetryable, time.Sleep, renameBudget)
}

func renameRetryable(err error) bool {
	return errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(err, windows.ERROR_ACCESS_DENIED) ||
		errors.Is(err, windows.ERROR_LOCK_VIOLATION)
}
