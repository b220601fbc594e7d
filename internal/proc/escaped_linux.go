package proc

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// killEscaped ends what cmd started outside its process group (setsid, a
// double fork): the group kill cannot reach it, and it would otherwise
// outlive the probe or job that started it.
//
// In a subreaper (Subreaper: the night), such a process is one of this
// process's own children by the time cmd's group is gone, and only those
// are looked at (sweep, subreaper_linux.go): the cost does not grow with
// the host's processes, and a process that emptied its environment is
// found too. Elsewhere (a hook's probe) the spawn mark is looked for in
// every readable /proc/<pid>/environ; processes of other users cannot be
// read and are not ours.
func killEscaped(cmd *exec.Cmd) {
	if subreaping.Load() {
		endSpawn(cmd)
		return
	}
	forgetSpawn(cmd)
	id := takeMark(cmd)
	if id == "" {
		return
	}
	for _, pid := range markedProcesses(id) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// markedProcesses lists the live processes whose environment carries id.
func markedProcesses(id string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		environ, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || len(environ) == 0 {
			continue
		}
		if hasMark(environ, id) {
			out = append(out, pid)
		}
	}
	return out
}
