//go:build unix

package session

import "os/exec"

func inOwnGroup(cmd *exec.Cmd) bool { return cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid }
