//go:build windows

package session

import (
	"os/exec"

	"golang.org/x/sys/windows"
)

func inOwnGroup(cmd *exec.Cmd) bool {
	return cmd.SysProcAttr != nil && cmd.SysProcAttr.CreationFlags&windows.CREATE_NEW_PROCESS_GROUP != 0
}
