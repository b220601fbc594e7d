package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/sessionstop"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/modelapi"
)

// Command is the `claude -p` command of one attempt, not started:
//
//	<agent.command> -p <prompt> --settings <f> --mcp-config <f> --strict-mcp-config
//	  --output-format stream-json --verbose <agent.args…> [--allowedTools <t>…]
//
// --allowedTools comes last because it is variadic: anything after it
// that is not a flag would be read as one more tool. A prompt that starts
// with '-' (it would be read as a flag) or is too long for one argument is
// given on stdin instead. The command runs in the job's cwd, in its own
// process group (proc.Prepare): cancelling ctx stops the whole group.
func Command(ctx context.Context, spec Spec, f Files) *exec.Cmd {
	b, job := spec.Batch, spec.Job
	args := []string{"-p"}
	prompt := spec.prompt()
	viaStdin := strings.HasPrefix(prompt, "-") || len(prompt) > promptArgMax
	if !viaStdin {
		args = append(args, prompt)
	}
	args = append(args, "--settings", f.Settings, "--mcp-config", f.MCPConfig, "--strict-mcp-config",
		"--output-format", "stream-json", "--verbose")
	args = append(args, b.Agent.Args...)
	// The job's own budget, after agent.args: the CLI takes the last of a
	// repeated flag.
	args = append(args, budgetArgs(job)...)
	if spec.Resume != "" {
		args = append(args, "--resume", spec.Resume)
	}
	if allowed := job.Allowed(); len(allowed) > 0 {
		args = append(args, "--allowedTools")
		args = append(args, allowed...)
	}
	// The agent is looked up in this process's PATH, as it always was; it
	// runs with the session's environment.
	cmd := proc.Command(ctx, nil, grace, b.Agent.Command, args...)
	cmd.Dir = job.Cwd
	cmd.Env = commandEnviron(spec, f)
	if viaStdin {
		cmd.Stdin = strings.NewReader(prompt)
	}
	// Otherwise stdin stays /dev/null: `claude -p` appends piped stdin to
	// the prompt, and the supervisor's stdin is nobody's input.
	// Claude first, the rest of its group after it is gone: a server
	// signalled with it dies under a call still in flight, and Claude
	// would run the failure hook for a stop nightwatch caused.
	proc.StopLeaderFirst(cmd)
	if spec.DieWithParent {
		proc.DieWithParent(cmd)
	}
	return cmd
}

var (
	errTimeout = errors.New("session timeout")
	errStall   = errors.New("session stalled")
)

// Run runs one attempt to its end and judges it. The stream is
// copied to f.Stream as it arrives and read line by line; stderr goes to
// f.Stderr. Job.Timeout (wall clock) and Job.StallTimeout (no stream
// output for that long; zero means no limit) end the session; so does
// cancelling ctx. Ending a
// session means a stopping marker for its hooks, SIGTERM to Claude, SIGKILL
// after a grace period, and then SIGKILL to the rest of its process group,
// so the MCP servers Claude Code started die with it, after it.
func Run(ctx context.Context, spec Spec, f Files, obs Observer) Outcome {
	if obs == nil {
		obs = ObserverFunc(func(Observation) {})
	}
	if spec.Job != nil {
		obs = stamped{obs, spec.Job.Name, spec.Attempt}
	}
	out := Outcome{Status: Failed, ExitCode: -1, Started: time.Now()}
	run(ctx, spec, f, obs, &out)
	if spec.Resume != "" {
		out.ResumedFrom = spec.Resume
		if cannotResume(out, f) && ctx.Err() == nil {
			// The old session is gone (or never reached the disk): a fresh
			// one, in the same attempt.
			fresh := spec
			fresh.Resume, fresh.ResumeWhy = "", ""
			why := out.Reason
			out = Outcome{Status: Failed, ExitCode: -1, Started: out.Started}
			run(ctx, fresh, f, obs, &out)
			out.ResumeFailed = text.OneLine(why, 200)
		}
	}
	out.Ended = time.Now()
	// The MCP config holds the servers' resolved secrets (API keys in env,
	// bearer tokens in headers); only the session and its hook need it.
	// The run's shared one, of a job without servers, holds none.
	if !f.SharedMCPConfig {
		_ = os.Remove(f.MCPConfig)
	}
	// A served hook's settings hold the night's hook token and name this
	// attempt alone (its key is in the URL): no other attempt shares them.
	if spec.HTTPHook != nil {
		_ = os.Remove(f.Settings)
	}
	// So do the values the session's environment left out for its servers.
	if f.Dir != "" {
		_ = os.Remove(filepath.Join(f.Dir, statedir.AttemptSecrets))
	}
	return out
}

func run(ctx context.Context, spec Spec, f Files, obs Observer, out *Outcome) {
	fail := func(format string, a ...any) { out.Reason = fmt.Sprintf(format, a...) }
	if spec.Batch == nil || spec.Job == nil {
		fail("session: batch and job are required")
		return
	}
	streamFile, err := atomicfile.OpenLog(f.Stream)
	if err != nil {
		fail("cannot open the stream log: %v", err)
		return
	}
	defer streamFile.Close()
	// Most sessions print nothing on stderr: its log is created on its
	// first byte, not before the spawn (a file created is an inode
	// allocated, the costliest step of an attempt on some disks).
	stderrFile := &lazyLog{path: f.Stderr}
	defer func() {
		if err := stderrFile.Close(); err != nil && out.Status != Done {
			out.Reason += " (" + err.Error() + ")"
		}
	}()
	stream := &cappedLog{w: streamFile, max: maxStreamLog}
	stderr := &cappedLog{w: stderrFile, max: maxStderrLog}

	// Who stops the session is told by the context's cause: the parent's
	// cancellation (stopped), the wall-clock timer or the stall watchdog.
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cmdCtx := runCtx
	if t := spec.Job.Timeout; t > 0 {
		var cancel context.CancelFunc
		cmdCtx, cancel = context.WithTimeoutCause(runCtx, t, errTimeout)
		defer cancel()
	}
	cmd := Command(cmdCtx, spec, f)
	// The kill is judged by whether the group was actually signalled, not
	// by the context alone: a timer that fires just after Claude exited
	// on its own did not kill anything. Every stop (the night's, a
	// worker's, an abandon, the timeout, the stall) is announced to the
	// session's hooks before the signal: what fails after it is the stop,
	// not a server (sessionstop).
	var killed atomic.Bool
	leaderStop := cmd.Cancel
	cmd.Cancel = func() error {
		killed.Store(true)
		if err := sessionstop.Announce(f.Dir); err != nil {
			fmt.Fprintf(stderr, "nightwatch: %v; the session's hooks may take its stop for a server's failure\n", err)
		}
		return leaderStop()
	}
	if spec.Ready != nil && !spec.Ready() {
		out.KilledBy = KilledStopped
		fail("not started: the supervisor did not let the session start")
		return
	}

	// exec copies the child's stdout into the pipe; the reader below
	// drains it. Through a pipe (not an *os.File), exec's WaitDelay also
	// bounds a grandchild that keeps stdout open after Claude exited.
	pr, pw := io.Pipe()
	// A hook holding a call prints nothing on 2.1.197; its holding and
	// held lines in the events file are the session's output meanwhile.
	holds := &holdLines{tail: healthcheck.EventTail{Path: f.Events}, dir: f.Dir}
	holds.tail.SkipToEnd()
	var lastOutput atomic.Int64
	lastOutput.Store(monoNow())
	cmd.Stdout = pw
	cmd.Stderr = stderr

	// The calls this session's hooks block are appended to the batch's
	// events file from now on: they are not permission denials.
	hookEvents := healthcheck.EventTail{Path: f.Events}
	hookEvents.SkipToEnd()
	if err := proc.Start(cmd); err != nil {
		pw.Close()
		if ctx.Err() != nil { // stopped before it could start
			out.KilledBy = KilledStopped
			fail("stopped by the supervisor before the session started")
			return
		}
		fail("cannot start %s: %v", spec.Batch.Agent.Command, err)
		return
	}

	obs.Observe(Observation{Kind: SawProcess, PGID: cmd.Process.Pid}) // the leader's pid is the group's id
	st := &streamState{obs: obs, job: spec.Job, batch: spec.Batch, stop: func(cause error) { stop(cause) }}
	if run, job, attempt, ok := statedir.AttemptOf(f.Dir); ok && f.Events != "" {
		// From where the hooks' tail starts: before the session did.
		st.answers = &answerTail{tail: hookEvents, run: run, job: job, attempt: attempt}
	}
	readDone := make(chan error, 1)
	go func() {
		err := ReadLines(activityReader{pr, &lastOutput}, stream, st.line)
		_, _ = io.Copy(io.Discard, pr) // never leave exec's copier blocked
		readDone <- err
	}()
	watchDone := make(chan struct{})
	if stall := spec.Job.StallTimeout; stall > 0 {
		go watchStall(runCtx, watchDone, stall, &lastOutput, holds.latest, func() { stop(errStall) })
	}

	waitErr := proc.Wait(cmd)
	close(watchDone)
	pw.Close()
	copyErr := <-readDone
	// No fsync of the stream log: it is for a person reading it later;
	// nothing the night decides or resumes from reads it back (the
	// outcome goes to the journal, whose lines are fsynced).

	if cmd.ProcessState != nil {
		out.ExitCode = cmd.ProcessState.ExitCode()
	}
	if killed.Load() {
		switch cause := context.Cause(cmdCtx); {
		case errors.Is(cause, errTimeout):
			out.KilledBy = KilledTimeout
		case errors.Is(cause, errStall):
			out.KilledBy = KilledStall
		case errors.As(cause, new(Abandon)):
			var ab Abandon
			errors.As(cause, &ab)
			out.KilledBy, out.Reason = KilledAbandoned, ab.Reason
		case errors.As(cause, new(*BudgetStop)):
			out.KilledBy, out.Budget = KilledBudget, st.overBudget
		default:
			out.KilledBy = KilledStopped
		}
	}
	if f.Events != "" {
		events := hookEvents.Next()
		st.blocked, st.refused = blockedCalls(events, st.sessionID)
		if run, job, attempt, ok := statedir.AttemptOf(f.Dir); ok {
			st.serverAnswered = serverAnsweredCalls(events, run, job, attempt)
		}
	}
	st.fill(out)
	writeFinal(f.Dir, st.result)
	judge(out, st.result, spec.Job, waitErr, lastLine(f.Stderr))
	st.classify(out, time.Now())
	if out.Budget == nil && out.KilledBy == "" && out.Status != Done {
		out.Budget = budgetOfResult(spec.Job, st.result)
	}
	if out.Budget != nil {
		// The job's budget, not the API, ended it: no API rule applies.
		out.API, out.Status, out.Reason = nil, Failed, out.Budget.Reason()
	}
	if a := out.API; a != nil && a.Class != modelapi.MaxTurns && a.Class != modelapi.ContextTooLong && a.Reason != "" {
		// The API's own words say more than "api error 429: …"; the
		// job's own failures keep judge's reason.
		out.Reason = text.OneLine(a.Reason, 300)
	}
	if copyErr != nil && out.Status != Done {
		out.Reason += " (" + copyErr.Error() + ")"
	}
	if out.Status == Done && spec.Job.Verify != nil {
		out.Verify = runVerify(ctx, spec)
		if !out.Verify.OK {
			out.Status, out.Reason = Failed, out.Verify.reason()
		}
	}
}

// monoStart anchors monoNow: time.Since of a time.Now reading uses the
// monotonic clock, so a jump of the wall clock (NTP, a laptop waking, an
// operator's date -s) neither ages nor rejuvenates a session's output.
var monoStart = time.Now()

// monoNow is the monotonic time since monoStart, in nanoseconds: what the
// stall watchdog stamps output with and measures idle time by.
func monoNow() int64 { return int64(time.Since(monoStart)) }

// watchStall ends the session when no stream output arrived for stall,
// measured on the monotonic clock (last holds monoNow stamps). It
// sleeps until the earliest moment a stall is possible, not on a fixed tick.
func watchStall(ctx context.Context, done <-chan struct{}, stall time.Duration, last *atomic.Int64, held func() (time.Time, bool), kill func()) {
	t := time.NewTimer(stall)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-t.C:
			idle := time.Duration(monoNow() - last.Load())
			if idle >= stall && held != nil {
				if at, ok := held(); ok {
					// The hook's wall-clock stamp, turned into the
					// monotonic clock's: how long ago it was written.
					now := monoNow()
					mono := now - int64(max(time.Since(at), 0))
					if mono > last.Load() {
						last.Store(mono)
					}
					idle = time.Duration(now - last.Load())
				}
			}
			if idle >= stall {
				kill()
				return
			}
			t.Reset(stall - idle)
		}
	}
}

// holdLines reads the holding and held lines the hooks of one session
// (its attempt folder, dir) appended to the batch's events file.
type holdLines struct {
	tail healthcheck.EventTail
	dir  string
}

// latest is the time of the newest such line since the last look.
func (h *holdLines) latest() (time.Time, bool) {
	var at time.Time
	for _, ev := range h.tail.Next() {
		if (ev.Kind == healthcheck.EventHolding || ev.Kind == healthcheck.EventHeld) && ev.Dir == h.dir && ev.Time.After(at) {
			at = ev.Time
		}
	}
	return at, !at.IsZero()
}

// activityReader records when output last arrived, partial lines included.
type activityReader struct {
	r    io.Reader
	last *atomic.Int64
}

func (a activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.last.Store(monoNow())
	}
	return n, err
}

// stamped tells its observer which attempt saw what.
type stamped struct {
	obs     Observer
	job     string
	attempt int
}

func (s stamped) Observe(o Observation) {
	o.Job, o.Attempt = s.job, s.attempt
	s.obs.Observe(o)
}

// cannotResume says whether a --resume session failed because the CLI
// could not resume the session (measured on 2.1.197 and 2.1.332: "No
// conversation found with session ID: …", exit 1, in stderr or the
// result, before any turn).
func cannotResume(out Outcome, f Files) bool {
	if out.Status == Done || out.KilledBy != "" || out.NumTurns > 0 {
		return false
	}
	for _, s := range []string{out.Reason, lastLine(f.Stderr)} {
		if strings.Contains(strings.ToLower(s), "no conversation found") {
			return true
		}
	}
	return false
}

// lazyLog is a log file created (atomicfile.OpenLog: owner-only, never
// through a symlink, a regular file only) when the first byte is written
// to it. A log that cannot be opened drops what it is given, so the child
// writing it is never blocked nor killed by a closed pipe; Close says why.
type lazyLog struct {
	path string
	mu   sync.Mutex
	f    *os.File
	err  error
}

func (l *lazyLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil && len(p) > 0 {
		if l.f, l.err = atomicfile.OpenLog(l.path); l.err != nil {
			l.err = fmt.Errorf("the session's stderr was not kept: %w", l.err)
		}
	}
	if l.f == nil {
		return len(p), nil
	}
	return l.f.Write(p)
}

// Close closes the file if it was made; the error is the open's, if it
// failed.
func (l *lazyLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
	}
	return l.err
}

// A session's logs are bounded on disk: a session that prints a GiB must
// not fill the disk the journal and the cache live on. What the
// supervisor reads of the stream is unaffected (it reads the pipe).
const (
	maxStreamLog = 64 << 20
	maxStderrLog = 16 << 20
)

// cappedLog writes at most max bytes to w, then one line that says the log
// was cut, then nothing: later writes are accepted and dropped, so the
// child is never blocked.
type cappedLog struct {
	w       io.Writer
	max     int64
	written int64
	cut     bool
}

func (c *cappedLog) Write(p []byte) (int, error) {
	if c.cut {
		return len(p), nil
	}
	if room := c.max - c.written; int64(len(p)) > room {
		n, err := c.w.Write(p[:room])
		c.written += int64(n)
		c.cut = true
		_, _ = fmt.Fprintf(c.w, "\n[nightwatch: this log was cut at %d bytes; the rest of the output was read and not kept]\n", c.max)
		if err != nil {
			return n, err
		}
		return len(p), nil
	}
	n, err := c.w.Write(p)
	c.written += int64(n)
	return n, err
}
