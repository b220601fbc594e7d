package probe

import (
	"os"
	"strconv"
	"strings"
)

// processAlive reports whether pid runs. A zombie counts as gone: it is
// dead, only unreaped, and orphans' zombies stay in containers whose init
// does not reap.
func processAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...; comm may hold spaces and parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z'
}
