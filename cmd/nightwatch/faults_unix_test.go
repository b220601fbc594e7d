//go:build unix

package main

import (
	"os"
	"syscall"
)

// minorFaults is the page faults a finished process took without reading
// from disk (rusage's ru_minflt): each page of the executable, its data,
// heap and stacks it touched first.
func minorFaults(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Minflt)
	}
	return -1
}
