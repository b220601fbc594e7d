package proc

import (
	"os"
	"strconv"
	"strings"
)

// StartID is the start time of pid in clock ticks since boot
// (field 22 of /proc/<pid>/stat), "" when the process is gone.
func StartID(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// Running reports whether pid is a process that has not ended: alive, and
// not a zombie its parent has yet to reap (a SIGKILLed worker is one until
// its starter waits for it).
func Running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Alive(pid) // no /proc to read: the signal's answer
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}
