package proc

import (
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// StartID is the start time of pid as ps reports it, "" when the
// process is gone.
func StartID(pid int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ps", "-o", "lstart=", "-p", strconv.Itoa(pid))
	Prepare(cmd, time.Second)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := Start(cmd); err != nil {
		return ""
	}
	if err := Wait(cmd); err != nil {
		return ""
	}
	return strings.TrimSpace(out.String())
}

// Running reports whether pid is a process that has not ended.
func Running(pid int) bool { return Alive(pid) }
