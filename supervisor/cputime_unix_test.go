//go:build unix

package supervisor

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used, and
// its reaped children: what a benchmark compares when the machine is too
// loaded for wall times to mean much.
func processCPU() (self, children time.Duration, ok bool) {
	var s, c syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &s) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c) != nil {
		return 0, 0, false
	}
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(s.Utime) + tv(s.Stime), tv(c.Utime) + tv(c.Stime), true
}
