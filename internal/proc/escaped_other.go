//go:build !linux

package proc

import "os/exec"

// killEscaped has no portable way to find a descendant that left its
// process group on this platform (macOS has no /proc environments to read),
// so only the group kill applies; the README says what remains.
func killEscaped(cmd *exec.Cmd) { takeMark(cmd) }
