package reconnect

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

const (
	// DefaultTimeout bounds a reconnect command when Options.Timeout is 0:
	// the Node original's 5 s. A hook is waiting on it.
	DefaultTimeout = 5 * time.Second
	// MaxOutput bounds Outcome.Output, in bytes.
	MaxOutput = 2 << 10
	// captureLimit is how much of the output's end is kept while the
	// command runs: far more than MaxOutput, so that redaction sees whole
	// lines around the part that is shown, and still small.
	captureLimit = 16 << 10
	// killGrace is how long the process group has between SIGTERM (at the
	// timeout) and SIGKILL.
	killGrace = time.Second
)

// Options tune one Run.
type Options struct {
	// Timeout bounds the command; DefaultTimeout when 0. The group gets
	// killGrace more to exit after SIGTERM.
	Timeout time.Duration
	// Dir is the command's working directory; empty means nightwatch's. A
	// relative program path ("./restart.sh") is resolved against it.
	Dir string
	// Env is the command's whole environment; nil means nightwatch's. The
	// program itself is looked up in nightwatch's PATH.
	Env []string
	// Secrets are values to redact from Command, Output and Err besides
	// what redact recognises on its own (the server's env values, say).
	Secrets []string
}

// Outcome is what became of one reconnect attempt. Every string in it is
// redacted and safe to log or store.
type Outcome struct {
	// Attempted is false when there was no command to run.
	Attempted bool
	// OK: the command exited with status 0 before the timeout.
	OK bool
	// Command is the argv that ran.
	Command []string
	// Output is the end of stdout and stderr, interleaved as written, at
	// most MaxOutput bytes, trimmed.
	Output string
	// KeptRunning: the command exited 0 and a process it started in a
	// session of its own (a daemon: setsid, a process manager) kept its
	// output open and was left running, as a reconnect may intend.
	KeptRunning bool
	// Duration is how long the attempt took, start to reaped.
	Duration time.Duration
	// Err says why OK is false: "timed out after 5s", "exit status 3",
	// "cannot start pm2: executable file not found in $PATH", …
	Err string
}

// Run runs argv (from Split and Expand) without a shell, bounded by
// opts.Timeout, and reports what happened; it never returns an error, an
// operator reads the Outcome. Empty argv: nothing to do, Attempted false.
//
// The command gets its own process group. At the timeout, or when ctx is
// cancelled, the whole group gets SIGTERM, then SIGKILL killGrace later.
// When the command ends, whatever it left in its group is killed too: a
// reconnect command must finish its work before it exits. To (re)start a
// long-lived server, ask a supervisor (pm2, systemd, launchd) or detach it
// into a session of its own (setsid); a plain "server &" would die with
// the command, and would otherwise pile up over a night of retries.
func Run(ctx context.Context, argv []string, opts Options) (out Outcome) {
	if len(argv) == 0 {
		return Outcome{}
	}
	start := time.Now()
	defer func() { out.Duration = time.Since(start) }()
	out = Outcome{Attempted: true, Command: redactArgv(argv, opts.Secrets)}
	program := argv[0]
	fail := func(format string, args ...any) Outcome {
		out.Err = redact.String(fmt.Sprintf(format, args...), opts.Secrets...)
		return out
	}

	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// A bare name is looked up in PATH (a path with a slash is kept as it
	// is, relative to Dir); a failed look-up surfaces at Start.
	cmd := proc.CommandAllowDaemons(runCtx, opts.Env, killGrace, program, argv[1:]...)
	cmd.Dir = opts.Dir
	cmd.Env = opts.Env
	output := &tailBuffer{limit: captureLimit}
	cmd.Stdout = output
	cmd.Stderr = output // same writer: exec shares one pipe, order kept

	// A missing Dir would otherwise be reported by Start as the program
	// being missing ("fork/exec /usr/bin/pm2: no such file or directory").
	if opts.Dir != "" {
		if _, err := os.Stat(opts.Dir); err != nil {
			return fail("cannot start %s: working directory %s: %s", program, opts.Dir, startProblem(err))
		}
	}
	if err := proc.Start(cmd); err != nil {
		return fail("cannot start %s: %s", program, startProblem(err))
	}
	waitErr, leftInGroup := proc.WaitLeft(cmd)
	out.Output = redact.Tail(strings.TrimSpace(redact.String(output.String(), opts.Secrets...)), MaxOutput)

	// A command that exits 0 only after the timeout's SIGTERM did not
	// finish its job: the timeout is checked before success is believed.
	switch {
	case waitErr == nil && runCtx.Err() == nil:
		out.OK = true
		return out
	case ctx.Err() != nil:
		return fail("cancelled: %v", context.Cause(ctx))
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return fail("timed out after %s", timeout)
	case errors.Is(waitErr, exec.ErrWaitDelay) && !leftInGroup:
		// The holder detached itself from the group: a daemon the
		// command meant to start. The attempt did what it was for.
		out.OK, out.KeptRunning = true, true
		return out
	case errors.Is(waitErr, exec.ErrWaitDelay):
		return fail("exited with status 0 but left a background process holding its output; the process group was killed")
	case waitErr == nil: // not reached: runCtx ends only by ctx or deadline
		out.OK = true
		return out
	default:
		return fail("%s", proc.ExitDescription(waitErr))
	}
}

// startProblem words why a command could not start without repeating its
// name: "executable file not found in $PATH", "permission denied".
func startProblem(err error) string {
	var execErr *exec.Error
	if errors.As(err, &execErr) {
		return execErr.Err.Error()
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err.Error()
	}
	return err.Error()
}

// redactArgv redacts each argument, and the argument after a flag whose
// name is sensitive ("--api-key", "sk-…" is caught anyway, "abc123" is not).
func redactArgv(argv, secrets []string) []string {
	redacted := make([]string, len(argv))
	for i, arg := range argv {
		previous := ""
		if i > 0 {
			previous = argv[i-1]
		}
		isFlag := strings.HasPrefix(previous, "-") && !strings.Contains(previous, "=")
		if isFlag && redact.SensitiveName(strings.TrimLeft(previous, "-")) && !strings.HasPrefix(arg, "-") {
			redacted[i] = redact.Marker
			continue
		}
		redacted[i] = redact.String(arg, secrets...)
	}
	return redacted
}

// tailBuffer keeps the last bytes written to it, up to about twice limit in
// memory, so a command printing megabytes costs kilobytes.
type tailBuffer struct {
	mu        sync.Mutex
	limit     int
	data      []byte
	truncated bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(p) >= b.limit {
		b.data = append(b.data[:0], p[len(p)-b.limit:]...)
		b.truncated = true
		return len(p), nil
	}
	b.data = append(b.data, p...)
	if len(b.data) > 2*b.limit {
		b.data = b.data[:copy(b.data, b.data[len(b.data)-b.limit:])]
		b.truncated = true
	}
	return len(p), nil
}

// String returns the kept tail. When the beginning was dropped, the first,
// partial line goes too: it may hold the end of a credential whose
// beginning (the part redaction would recognise) was dropped.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, truncated := b.data, b.truncated
	if len(data) > b.limit {
		data, truncated = data[len(data)-b.limit:], true
	}
	text := string(data)
	if truncated {
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	return text
}
