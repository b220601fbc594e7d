//go:build !windows

package atomicfile

import "os"

// rename is os.Rename: POSIX replaces the target atomically even while a
// reader holds it open (the reader keeps the old file).
func rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
