package supervisor

import (
	"os/exec"
	"strconv"
	"strings"
)

// processStartID is the start time of pid as ps reports it, "" when the
// process is gone.
func processStartID(pid int) string {
	out, err := exec.Command("ps", "-o", "lstart=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
