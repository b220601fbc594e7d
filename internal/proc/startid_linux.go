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
