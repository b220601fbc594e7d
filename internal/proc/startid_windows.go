package proc

import (
	"strconv"

	"golang.org/x/sys/windows"
)

// StartID is the creation time of pid (FILETIME, 100 ns ticks), ""
// when the process is gone: with the pid it names one process, so a pid
// the system reused is never taken for a session a dead supervisor left.
func StartID(pid int) string {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return ""
	}
	defer windows.CloseHandle(h)
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return ""
	}
	return strconv.FormatInt(created.Nanoseconds(), 10)
}

// Running reports whether pid is a process that has not ended.
func Running(pid int) bool { return Alive(pid) }
