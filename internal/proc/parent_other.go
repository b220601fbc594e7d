//go:build !linux && !darwin

package proc

import "os/exec"

// DieWithParent is Linux's parent-death signal. On Windows every process
// nightwatch starts is in a kill-on-close Job Object whose one handle its
// starter holds (group_windows.go): when the starter dies, even killed,
// the system closes the handle and kills the whole tree, Claude Code and
// every server exec-server started in a nested job. Nothing more to do.
func DieWithParent(*exec.Cmd) {}

// OnParentExit does nothing on Windows: the Job Object of Claude Code's
// session ends this process with it (see DieWithParent).
func OnParentExit(gone func()) (stop func(), err error) { return func() {}, nil }
