//go:build !linux

package proc

import "os/exec"

// killEscaped has no portable way to find a descendant that left its group
// on this platform: macOS has no /proc environments to read (only the
// process-group kill applies; the README says what remains), and on Windows
// the Job Object already holds every descendant.
func killEscaped(cmd *exec.Cmd) { takeMark(cmd) }
