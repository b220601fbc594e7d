//go:build !windows

package command

import "os/exec"

// setCmdLine is Windows' alone; Resolve sets no command line elsewhere.
func setCmdLine(*exec.Cmd, string) {}
