package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/command"
)

// DefaultGrace is the time between asking a child's group to stop and
// killing it, for children that have nothing to save.
const DefaultGrace = 500 * time.Millisecond

// Command is the one way nightwatch makes a child process: name resolved as
// the platform's launcher would (internal/command: PATHEXT and batch files
// on Windows) in the PATH of env (nil: this process's), the child in a
// group of its own, cancelled with ctx (stop, then kill grace later).
// Start it with Start and wait with Wait. cmd.Env is set to env when env
// is not nil; it, Dir and the standard streams may still be changed
// before Start.
func Command(ctx context.Context, env []string, grace time.Duration, name string, args ...string) *exec.Cmd {
	cmd := command.CommandContext(ctx, env, name, args...)
	if env != nil {
		cmd.Env = env
	}
	Prepare(cmd, grace)
	return cmd
}

// Spec is a child process run to its end by Run.
type Spec struct {
	// Argv is the program and its arguments; Argv[0] is resolved by Command.
	Argv []string
	// Env is the child's whole environment (nil: this process's).
	Env []string
	// Dir is its working folder ("": this process's).
	Dir   string
	Stdin io.Reader
	// Timeout bounds the child (0: only ctx does); Grace is the time
	// between stop and kill (0: DefaultGrace).
	Timeout, Grace time.Duration
	// MaxOutput bounds what is kept of each of stdout and stderr (0:
	// DefaultMaxOutput): the first and the last half of it, with a line
	// that says how much was cut between them. The child is never blocked:
	// the rest is read and dropped.
	MaxOutput int
}

// DefaultMaxOutput is what Run keeps of a child's stdout and of its stderr
// when the Spec names no bound: a notify command that prints 600 MiB must
// not cost the night 2 GiB of memory.
const DefaultMaxOutput = 1 << 20

// Result is how a child run by Run ended.
type Result struct {
	// Stdout and Stderr are what was kept (Spec.MaxOutput).
	Stdout, Stderr []byte
	// ExitCode is the child's exit status; -1 when it did not start or was
	// killed by a signal.
	ExitCode int
}

// RunError is a child that did not exit 0: Argv[0], how it ended (as
// ExitDescription words it) and the last lines it wrote to stderr.
type RunError struct {
	Program string
	How     string
	Stderr  string
	// TimedOut: Spec.Timeout ended it.
	TimedOut bool
	Err      error
}

func (e *RunError) Error() string {
	msg := e.Program + ": " + e.How
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *RunError) Unwrap() error { return e.Err }

// Run runs a child to its end with its output captured: an error for a
// child that could not start, timed out, or did not exit 0 (a *RunError,
// whose Err is the *exec.ExitError when it exited), Result in every case.
func Run(ctx context.Context, s Spec) (Result, error) {
	res := Result{ExitCode: -1}
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return res, errors.New("no command to run")
	}
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	grace := s.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	cmd := Command(ctx, s.Env, grace, s.Argv[0], s.Argv[1:]...)
	cmd.Dir, cmd.Stdin = s.Dir, s.Stdin
	max := s.MaxOutput
	if max <= 0 {
		max = DefaultMaxOutput
	}
	stdout, stderr := newCapped(max), newCapped(max)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := Start(cmd); err != nil {
		return res, fmt.Errorf("cannot start %s: %w", s.Argv[0], err)
	}
	err := Wait(cmd)
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if err == nil {
		return res, nil
	}
	re := &RunError{Program: s.Argv[0], How: ExitDescription(err), Stderr: lastLines(string(res.Stderr)), Err: err}
	if s.Timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		re.How, re.TimedOut = "no answer within "+s.Timeout.String(), true
	}
	return res, re
}

// lastLines is the last three non-empty lines of s on one line, at most
// 300 bytes of them: enough to say why, never a whole log.
func lastLines(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	out := strings.Join(lines, " | ")
	if len(out) > 300 {
		out = "…" + out[len(out)-300:]
	}
	return out
}

// CommandAllowDaemons is Command for a command whose purpose may be to
// start a long-lived process outside its group (PrepareAllowDaemons).
func CommandAllowDaemons(ctx context.Context, env []string, grace time.Duration, name string, args ...string) *exec.Cmd {
	cmd := command.CommandContext(ctx, env, name, args...)
	if env != nil {
		cmd.Env = env
	}
	PrepareAllowDaemons(cmd, grace)
	return cmd
}

// capped keeps the first and the last half of at most max bytes written to
// it, and counts what fell between.
type capped struct {
	max     int
	head    []byte
	tail    []byte // a ring once full: tail[next:] then tail[:next]
	next    int
	dropped int64
}

func newCapped(max int) *capped { return &capped{max: max} }

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.max/2 - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	half := c.max - c.max/2
	for len(p) > 0 {
		if len(c.tail) < half {
			k := min(half-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			continue
		}
		// Full: overwrite the oldest bytes.
		k := min(half-c.next, len(p))
		c.dropped += int64(k)
		copy(c.tail[c.next:], p[:k])
		c.next = (c.next + k) % half
		p = p[k:]
	}
	return n, nil
}

// Bytes is what was kept, in order, with the cut said where it was.
func (c *capped) Bytes() []byte {
	out := append([]byte(nil), c.head...)
	if c.dropped > 0 {
		out = append(out, fmt.Sprintf("\n[… %d bytes cut by nightwatch …]\n", c.dropped)...)
	}
	out = append(out, c.tail[c.next:]...)
	return append(out, c.tail[:c.next]...)
}
