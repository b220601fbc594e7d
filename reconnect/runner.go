package reconnect

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
)

// Runner is the one way nightwatch runs a reconnect command, for the hook
// and the night alike: the same look-up, the same timeout, the same
// warning about shell syntax and the same redacted one-line result. Its
// Have and Run are healthcheck.Options' HaveReconnect and Reconnect.
type Runner struct {
	// Getenv finds NIGHTWATCH_RECONNECT_<KEY>, … (CommandFor); the night
	// passes its sessions' environment so that it finds what their hooks
	// find.
	Getenv func(string) (string, bool)
	// Configured, when set, returns a server's command from somewhere
	// stronger than the environment (the batch's servers.<name>.reconnect)
	// and where it came from; "" falls back to the environment.
	Configured func(server string) (command, source string)
	// Timeout bounds one command (DefaultTimeout when 0).
	Timeout time.Duration
	// Dir and Env are the command's working folder and whole environment
	// (nightwatch's own when empty).
	Dir string
	Env []string
	// Secrets returns the values to redact for a server (its env and
	// header values).
	Secrets func(server string) []string
	// Warn receives what the operator must hear (the shell-syntax
	// warning, a command that cannot be split).
	Warn func(string)
	// Observe, when set, is told every attempt (the hook's log, the
	// night's journal).
	Observe func(server string, res healthcheck.ReconnectResult)
}

// Command returns the command configured for server and its source.
func (r *Runner) Command(server string) (command, source string) {
	if r.Configured != nil {
		if c, s := r.Configured(server); strings.TrimSpace(c) != "" {
			return c, s
		}
	}
	getenv := r.Getenv
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	return CommandFor(server, getenv)
}

// Have says whether server has a reconnect command.
func (r *Runner) Have(server string) bool {
	c, _ := r.Command(server)
	return c != ""
}

// Run runs server's reconnect command: split without a shell, {server}
// substituted inside arguments, bounded by Timeout, its process group
// killed at the end. Nothing configured: Attempted is false.
func (r *Runner) Run(ctx context.Context, server string) healthcheck.ReconnectResult {
	command, source := r.Command(server)
	if command == "" {
		return healthcheck.ReconnectResult{}
	}
	var secrets []string
	if r.Secrets != nil {
		secrets = r.Secrets(server)
	}
	argv, err := Split(command)
	if err != nil {
		r.warn(fmt.Sprintf("nightwatch: %s cannot be read as a command: %v", source, err))
		res := healthcheck.ReconnectResult{Attempted: true, Detail: fmt.Sprintf("%s: %v", source, err)}
		r.observe(server, res)
		return res
	}
	if syn := ShellSyntax(command); len(syn) > 0 {
		quoted := make([]string, len(syn))
		for i, s := range syn {
			quoted[i] = strconv.Quote(s)
		}
		r.warn(fmt.Sprintf("nightwatch: %s uses shell syntax (%s) that nightwatch does not interpret; write sh -c '…' yourself if you need a shell",
			source, strings.Join(quoted, ", ")))
	}
	out := Run(ctx, Expand(argv, server), Options{Timeout: r.Timeout, Dir: r.Dir, Env: r.Env, Secrets: secrets})
	res := healthcheck.ReconnectResult{Attempted: out.Attempted, OK: out.OK, Detail: Describe(out)}
	r.observe(server, res)
	return res
}

// Describe is an Outcome in one line: the command, how long it took, why
// it failed and the end of its output.
func Describe(out Outcome) string {
	detail := fmt.Sprintf("%s (%s)", strings.Join(out.Command, " "), out.Duration.Round(time.Millisecond))
	if !out.OK && out.Err != "" {
		detail += ": " + out.Err
	}
	if out.KeptRunning {
		detail += ": exited 0; a process it started in a session of its own kept running (a daemon)"
	}
	if o := strings.Join(strings.Fields(out.Output), " "); o != "" {
		if len(o) > 200 {
			cut := 200
			for cut > 0 && o[cut]&0xC0 == 0x80 {
				cut--
			}
			o = o[:cut] + "…"
		}
		detail += ": " + o
	}
	return detail
}

func (r *Runner) warn(msg string) {
	if r.Warn != nil {
		r.Warn(msg)
	}
}

func (r *Runner) observe(server string, res healthcheck.ReconnectResult) {
	if r.Observe != nil {
		r.Observe(server, res)
	}
}
