//go:build windows

package probe

import "os"

// processAlive reports whether pid exists: on Windows FindProcess opens a
// handle, which fails once the process is gone.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
