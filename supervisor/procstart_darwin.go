package supervisor

import (
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// processStartID is the start time of pid as ps reports it, "" when the
// process is gone.
func processStartID(pid int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ps", "-o", "lstart=", "-p", strconv.Itoa(pid))
	proc.Prepare(cmd, time.Second)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := proc.Start(cmd); err != nil {
		return ""
	}
	if err := proc.Wait(cmd); err != nil {
		return ""
	}
	return strings.TrimSpace(out.String())
}
