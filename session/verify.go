package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// verifyTail is how much of a verify command's output is kept: the end,
// where test runners and linters put the verdict.
const verifyTail = 2000

// VerifyResult is how the job's verify command judged the work.
type VerifyResult struct {
	Command  []string      `json:"command"`
	OK       bool          `json:"ok"`
	ExitCode int           `json:"exit_code"`        // -1: killed or never started
	Output   string        `json:"output,omitempty"` // the tail of stdout and stderr, redacted
	Duration time.Duration `json:"duration_ns"`
	// Err says why it did not exit by itself (timeout, could not start).
	Err string `json:"err,omitempty"`
}

// reason is the attempt's failure reason for a check that did not pass.
func (v *VerifyResult) reason() string {
	what := fmt.Sprintf("exit %d", v.ExitCode)
	if v.Err != "" {
		what = v.Err
	}
	r := fmt.Sprintf("verify failed (%s)", what)
	if tail := text.OneLine(lastLines(v.Output, 3), 200); tail != "" {
		r += ": " + tail
	}
	return r
}

// Feedback is what the next attempt's prompt is told about a check that
// did not pass; "" when it passed.
func (v *VerifyResult) Feedback() string {
	if v == nil || v.OK {
		return ""
	}
	what := fmt.Sprintf("exited %d", v.ExitCode)
	if v.Err != "" {
		what = v.Err
	}
	return fmt.Sprintf("The previous attempt at this task finished, but its check `%s` %s. Its output ended with:\n%s\nFix what the check reports.",
		strings.Join(v.Command, " "), what, v.Output)
}

// runVerify runs the job's verify command in the job's cwd with the
// session's environment, bounded by its own timeout and ctx, through
// internal/proc (its whole group dies with it).
func runVerify(ctx context.Context, spec Spec) *VerifyResult {
	v := spec.Job.Verify
	res := &VerifyResult{Command: v.Command, ExitCode: -1}
	started := time.Now()
	vctx, cancel := context.WithTimeout(ctx, v.Timeout)
	defer cancel()
	// The session's environment, and its PATH to find the command in.
	cmd := proc.Command(vctx, Environ(spec.Batch, spec.Env), grace, v.Command[0], v.Command[1:]...)
	cmd.Dir = spec.Job.Cwd
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := proc.Start(cmd)
	if err == nil {
		err = proc.Wait(cmd)
	}
	res.Duration = time.Since(started)
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	var secrets []string
	for _, srv := range spec.Batch.ServersOf(spec.Job) {
		secrets = append(secrets, srv.MCP.Secrets()...)
	}
	res.Output = redact.String(strings.TrimSpace(out.String()), secrets...)
	var exitErr *exec.ExitError
	switch {
	case errors.Is(vctx.Err(), context.DeadlineExceeded):
		res.Err = "timed out after " + shortDuration(v.Timeout)
	case ctx.Err() != nil:
		res.Err = "stopped by the supervisor"
	case err != nil && !errors.As(err, &exitErr):
		res.Err = "cannot run: " + redact.String(err.Error(), secrets...)
	}
	res.OK = err == nil && res.ExitCode == 0
	return res
}

// lastLines is the last n non-empty lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// tailBuffer keeps the last verifyTail*4 bytes written to it, so a chatty
// check cannot fill the supervisor's memory.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - 4*verifyTail; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return redact.Tail(t.buf.String(), verifyTail)
}
