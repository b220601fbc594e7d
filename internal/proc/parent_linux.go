package proc

import (
	"os/exec"
	"syscall"
)

// DieWithParent has the kernel kill cmd when the process that started it
// dies, even by SIGKILL: a cluster worker's session must not go on after
// the worker is gone, or the attempt River runs again elsewhere would do
// the job twice. (Linux delivers it when the starting thread exits; Go's
// runtime keeps a thread alive unless a goroutine locked to it exits,
// which nightwatch never does.)
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
