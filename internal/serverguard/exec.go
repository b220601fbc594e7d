package serverguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/launch"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/sessionstop"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
)

// Entry is what `nightwatch exec-server` was given.
type Entry struct {
	Server string
	Keep   []string
	Argv   []string
	// Limits left zero take the defaults (Config): Restarts below zero
	// never restarts, NoHang never judges the server hung.
	Restarts               int
	Window                 time.Duration
	HangAfter, PingTimeout time.Duration
	NoHang                 bool
}

// Serve runs an exec-server: the server of e with the least-privilege
// environment (package launch), guarded between this process's stdin and
// stdout, bound to the process that started it (Claude Code), its starts,
// restarts and loss written to the night's events file
// (NIGHTWATCH_EVENTS) with the attempt the session runs. It returns the
// exit code.
func Serve(e Entry, stderr io.Writer) int {
	if len(e.Argv) == 0 {
		fmt.Fprintln(stderr, "exec-server: no command after --")
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()
	// Claude Code gone: nothing of its session may go on (on Linux the
	// kernel kills this process, and the server with it).
	stopWatch, err := proc.OnParentExit(cancel)
	if err != nil {
		fmt.Fprintf(stderr, "exec-server: %v\n", err)
		return 1
	}
	defer stopWatch()
	env := os.Environ()
	cfg := Config{Server: e.Server, Argv: e.Argv, Env: launch.Environment(env, e.Keep), Stderr: stderr,
		Restarts: e.Restarts, Window: e.Window, HangAfter: e.HangAfter, PingTimeout: e.PingTimeout,
		Notify: both(Announcer(os.LookupEnv, e.Server, stderr), TaskRecorder(os.LookupEnv, e.Server, stderr)),
		// Read when a call is lost, from the ledger the session's
		// environment names (the job's, with its servers' tools/list hints).
		Hints: func(tool string) effects.Hints { return effects.HintsFrom(os.LookupEnv, e.Server, tool) }}
	if e.NoHang {
		cfg.HangAfter = -1
	}
	err = Run(ctx, cfg, os.Stdin, os.Stdout)
	var ee *exec.ExitError
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return 0
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		// The server's own failure, as Claude Code would have seen it.
		return ee.ExitCode()
	case errors.Is(err, ErrStart):
		fmt.Fprintf(stderr, "exec-server: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "exec-server: %s: %v\n", e.Server, err)
		return 1
	}
}

// Announcer writes a guard's events to the events file its environment
// names, with the attempt of the session (sessionstop.DirEnv); nil when
// there is no events file.
func Announcer(getenv func(string) (string, bool), server string, warn io.Writer) func(Event) {
	home, _ := os.UserHomeDir()
	k := knobs.FromEnv(getenv, home)
	if k.EventsPath.V == "" {
		return nil
	}
	log := &healthcheck.EventLog{Path: k.EventsPath.V, Warn: func(s string) { fmt.Fprintln(warn, s) }}
	var run, job string
	var attempt int
	if dir, ok := getenv(sessionstop.DirEnv); ok {
		run, job, attempt, _ = statedir.AttemptOf(dir)
	}
	return func(ev Event) {
		if ev.Kind == Tasked {
			return // the job's ledger has it (TaskRecorder)
		}
		kind := map[EventKind]string{Started: healthcheck.EventServerStarted,
			Restarted: healthcheck.EventServerRestarted, Lost: healthcheck.EventServerLost,
			Answered: healthcheck.EventCallAnswered}[ev.Kind]
		out := healthcheck.Event{Time: time.Now().UTC(), Kind: kind, Server: server, Reason: ev.Reason,
			Run: run, Job: job, Attempt: attempt, Start: ev.Start, PID: ev.PID}
		if ev.Kind == Answered {
			out.Reason, out.Verdict, out.Tool, out.ToolUseID = "", ev.Reason, ev.Tool, ev.ToolUseID
		}
		log.Append(out)
	}
}

// TaskRecorder records each call the server answered with an MCP task
// (Tasked) in the job's side-effect ledger its environment names
// (effects.SessionLedger), with the attempt, server, tool, task id and
// tool_use_id: the same record the hook makes when 2.1.332 fails such a
// call, so the night treats the task the same way whatever the CLI did
// with the answer. Nil when the session keeps no ledger.
func TaskRecorder(getenv func(string) (string, bool), server string, warn io.Writer) func(Event) {
	path, attempt, ok := effects.SessionLedger(getenv)
	if !ok {
		return nil
	}
	return func(ev Event) {
		if ev.Kind != Tasked {
			return
		}
		fmt.Fprintf(warn, "nightwatch: MCP server %q answered a call of %s with task %q, which the session does not follow; the task runs on at the server\n",
			server, ev.Tool, ev.TaskID)
		if err := effects.RecordTask(path, attempt, server, ev.Tool, effects.TaskRef{ID: ev.TaskID, ToolUseID: ev.ToolUseID}, time.Now()); err != nil {
			fmt.Fprintf(warn, "nightwatch: side-effect ledger: %v\n", err)
		}
	}
}

// both tells each event to a and b (either may be nil).
func both(a, b func(Event)) func(Event) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(ev Event) { a(ev); b(ev) }
}
