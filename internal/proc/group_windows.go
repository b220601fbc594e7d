//go:build windows

package proc

import (
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// jobs maps a started command to its Job Object. Every process the child
// starts is in the job too (unless it asks to break away, which the job
// does not allow), and closing the last handle kills them all
// (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE): even if nightwatch itself dies, the
// tree goes with it.
var jobs sync.Map // *exec.Cmd → windows.Handle

func newGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// A group of its own, so CTRL_BREAK reaches the child's console
	// process group and not nightwatch.
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP
}

// joinGroup puts the started child in a new kill-on-close Job Object. A
// grandchild the child starts before this runs is missed; Start calls it
// right after CreateProcess returns, before the child has run long.
func joinGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		_ = windows.CloseHandle(job)
		return
	}
	jobs.Store(cmd, job)
}

func releaseGroup(cmd *exec.Cmd) {
	if v, ok := jobs.LoadAndDelete(cmd); ok {
		_ = windows.CloseHandle(v.(windows.Handle))
	}
}

// Terminate asks the child's console process group to stop (CTRL_BREAK);
// Wait kills the job after the grace.
func Terminate(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	if err := windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(cmd.Process.Pid)); err != nil {
		// No console to signal (a GUI or detached child): stop it now.
		KillGroup(cmd)
	}
}

// TerminateLeader is Terminate: CTRL_BREAK reaches a console process
// group, never one process of it.
func TerminateLeader(cmd *exec.Cmd) { Terminate(cmd) }

// KillGroup terminates every process of the child's Job Object (or the
// child alone when it has none).
func KillGroup(cmd *exec.Cmd) {
	if v, ok := jobs.Load(cmd); ok {
		_ = windows.TerminateJobObject(v.(windows.Handle), 1)
		return
	}
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION (winnt.h), which
// x/sys/windows does not define.
type jobAccounting struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

// groupAlive reports whether the child's Job Object still holds a process.
func groupAlive(cmd *exec.Cmd) bool {
	v, ok := jobs.Load(cmd)
	if !ok {
		return false
	}
	var info jobAccounting
	if err := windows.QueryInformationJobObject(v.(windows.Handle), windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		return false
	}
	return info.ActiveProcesses > 0
}

func signalOf(*exec.ExitError) (string, bool) { return "", false }

// KillGroupID terminates the process pid. The Job Object of a dead
// supervisor's session was closed with it (kill-on-close), so its tree is
// normally gone already; this ends a leader that somehow outlived it.
func KillGroupID(pid int) error {
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.TerminateProcess(h, 1)
}

// Alive reports whether a process pid is still running.
func Alive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	const stillActive = 259
	return code == stillActive
}
