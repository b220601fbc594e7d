//go:build !windows

package pgtest

import (
	"os/exec"
	"syscall"
)

func (c *credential) apply(cmd *exec.Cmd) {
	if c == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.uid, Gid: c.gid}
}
