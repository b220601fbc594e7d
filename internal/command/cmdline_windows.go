//go:build windows

package command

import (
	"os/exec"
	"syscall"
)

// setCmdLine makes CreateProcess get line exactly as written: os/exec would
// otherwise quote Args by the C runtime's rules, which cmd.exe does not
// follow.
func setCmdLine(cmd *exec.Cmd, line string) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CmdLine = line
}
