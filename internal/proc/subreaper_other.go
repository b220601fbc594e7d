//go:build !linux

package proc

import "os/exec"

// Subreaper does nothing here: on Windows every descendant is in its
// spawn's kill-on-close Job Object already, and macOS has no subreaper
// (only the process-group kill applies; RELIABILITY.md says what remains).
// On Linux it makes this process the one escaped descendants come back to
// (subreaper_linux.go).
func Subreaper() (release func(), err error) { return func() {}, nil }

func beforeStart() (after func()) { return func() {} }

func registerSpawn(*exec.Cmd) {}

// LeavesNothing matters only to Linux's subreaper (subreaper_linux.go).
func LeavesNothing(*exec.Cmd) {}

// RunningSpawns matters only to Linux's subreaper (subreaper_linux.go).
func RunningSpawns() []int { return nil }
