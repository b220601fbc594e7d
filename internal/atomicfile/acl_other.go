//go:build !windows

package atomicfile

import "os"

// restrict is Windows' alone: elsewhere the mode bits are the permission.
func restrict(string, os.FileMode) error { return nil }
