//go:build !linux

package proc

import "os/exec"

// DieWithParent is Linux's parent-death signal; elsewhere a session left by
// a dead worker is ended by the next worker on its host (cluster/queue),
// which kills the process groups the dead one recorded.
func DieWithParent(*exec.Cmd) {}
