package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/secrets"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/reconnect"
)

// Event names of the Claude Code hook protocol that nightwatch handles.
const (
	PreToolUse         = "PreToolUse"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
)

// Exit codes. 2 is the one Claude Code reads as "block" in PreToolUse.
const (
	ExitAllow = 0
	ExitBlock = 2
)

// Env is what the hook reads from its process.
type Env struct {
	Getenv knobs.Getenv
	Home   string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Now    func() time.Time
	// Knobs are the settings after flags were applied.
	Knobs knobs.Knobs
}

// Run handles one hook invocation and returns the process exit code. It
// never panics outward and never blocks a call it could not judge: what it
// cannot decide safely it lets through and says so on stderr.
func Run(ctx context.Context, env Env) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(env.Stderr, "nightwatch: internal error in hook (%v); the call goes ahead unchecked\n", r)
			code = ExitAllow
		}
	}()
	p, err := Decode(env.Stdin)
	if err != nil {
		fmt.Fprintf(env.Stderr, "nightwatch: %v; the call goes ahead unchecked\n", err)
		return ExitAllow
	}
	// Non-MCP tools leave at once: nothing else is read, nothing written.
	if !strings.HasPrefix(p.ToolName, "mcp__") {
		return ExitAllow
	}
	h := newHandler(env, p)
	defer h.close()
	return h.handle(ctx)
}

type handler struct {
	env      Env
	p        *Payload
	event    string
	store    *healthcheck.Store
	checker  *healthcheck.Checker
	log      zerolog.Logger
	logFile  *os.File
	resolved *mcpconfig.Resolved
	secrets  []string
}

func newHandler(env Env, p *Payload) *handler {
	h := &handler{env: env, p: p}
	k := env.Knobs
	for _, prob := range k.Problems {
		h.say("nightwatch: " + prob)
	}
	h.log = zerolog.Nop()
	if k.LogPath.V != "" {
		// Its folder is created like the cache's (0700); O_NOFOLLOW: a
		// planted symlink must not redirect the log to another file.
		_ = os.MkdirAll(filepath.Dir(k.LogPath.V), 0o700)
		f, err := os.OpenFile(k.LogPath.V, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			h.say(fmt.Sprintf("nightwatch: cannot open log file: %v", err))
		} else {
			h.logFile = f
			h.log = zerolog.New(f).With().Timestamp().Str("session", p.SessionID).Logger()
		}
	}
	h.event = p.Event
	if h.event == "" {
		h.event = h.inferEvent()
	}
	h.store = &healthcheck.Store{Path: k.StatePath.V, Warn: h.say, Now: h.now}
	settings := k.Settings()
	h.checker = &healthcheck.Checker{
		Store:    h.store,
		Settings: settings,
		Now:      h.now,
		Probe:    h.probe,
		Policy: func(code healthcheck.FailureCode, have bool) healthcheck.Action {
			return healthcheck.Action(reconnect.DefaultPolicy(reconnect.Failure(code), have))
		},
		HaveReconnect: func(server string) bool {
			cmd, _ := reconnect.CommandFor(server, env.Getenv)
			return cmd != ""
		},
		Reconnect: h.reconnect,
		ProbeWait: k.ProbeTimeout.V + k.ReconnectTimeout.V + 2*time.Second,
		Events:    &healthcheck.EventLog{Path: k.EventsPath.V, Warn: h.say},
		Warn:      h.say,
		Redact:    h.redact,
	}
	return h
}

func (h *handler) close() {
	if h.logFile != nil {
		_ = h.logFile.Close()
	}
}

func (h *handler) now() time.Time {
	if h.env.Now != nil {
		return h.env.Now()
	}
	return time.Now()
}

func (h *handler) say(msg string) {
	fmt.Fprintln(h.env.Stderr, msg)
	h.log.Warn().Msg(msg)
}

// inferEvent is the fallback when the payload has no hook_event_name:
// the variable the article relied on, then the payload's own shape. The
// article's default (every call is PreToolUse) made failure hooks block.
func (h *handler) inferEvent() string {
	if v, ok := h.env.Getenv("CLAUDE_HOOK_EVENT_NAME"); ok && v != "" {
		return v
	}
	event := PreToolUse
	switch {
	case h.p.HasError:
		event = PostToolUseFailure
	case h.p.HasToolResponse:
		event = PostToolUse
	}
	h.say(fmt.Sprintf("nightwatch: the hook input has no hook_event_name; treating it as %s from its fields", event))
	return event
}

func (h *handler) handle(ctx context.Context) int {
	server, tool := h.identify()
	h.log.Debug().Str("event", h.event).Str("server", server).Str("tool", tool).Msg("hook")
	switch h.event {
	case PreToolUse:
		return h.preToolUse(ctx, server, tool)
	case PostToolUse:
		h.checker.RecordSuccess(server, h.lookup(server))
	case PostToolUseFailure:
		cl, e := h.checker.RecordFailure(ctx, server, h.lookup(server), h.p.Error)
		ev := h.log.Info().Str("server", server).Str("class", string(cl.Code))
		if e != nil {
			ev = ev.Str("status", string(e.Status))
		}
		ev.Msg("call failed")
	}
	// Post events record state; their exit code has no effect on a call
	// that already happened.
	return ExitAllow
}

func (h *handler) preToolUse(ctx context.Context, server, tool string) int {
	d := h.checker.Decide(ctx, server, func() *mcpconfig.Server { return h.lookup(server) })
	if d.Note != "" {
		h.say("nightwatch: " + d.Note)
	}
	if d.Allow {
		h.log.Info().Str("server", server).Str("tool", tool).Bool("probed", d.Probed).Msg("allow")
		return ExitAllow
	}
	msg := BlockMessage(server, d.Entry, h.now())
	if fo := h.env.Knobs.FailOpen; fo.V {
		h.say(fmt.Sprintf("nightwatch: FAIL-OPEN (%s) lets this call to unhealthy server %q through; it would have been blocked: %s", fo.Source, server, msg))
		h.log.Warn().Str("server", server).Str("tool", tool).Msg("fail-open: allowed a call to an unhealthy server")
		return ExitAllow
	}
	h.checker.Events.Append(healthcheck.Event{Time: h.now(), Kind: healthcheck.EventBlocked,
		Session: h.p.SessionID, Server: server, Tool: h.p.ToolName, Code: string(d.Entry.LastFailureCode),
		Reason: d.Entry.LastError, Until: d.Entry.NextRetryAt.Time()})
	h.log.Info().Str("server", server).Str("tool", tool).Str("code", string(d.Entry.LastFailureCode)).Msg("block")
	// The deny decision is what the model reads; stderr carries the same
	// words for logs and for anyone reading the article's exit-2 output.
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName":            PreToolUse,
		"permissionDecision":       "deny",
		"permissionDecisionReason": msg,
	}})
	fmt.Fprintln(h.env.Stdout, string(out))
	fmt.Fprintln(h.env.Stderr, msg)
	return ExitBlock
}

// identify finds the server a tool belongs to from the tool name Claude
// Code built and the configured server names, never from tool_input. The
// cache's names answer the common case without reading any config; the
// config is read when a name could be ambiguous (it contains "__").
func (h *handler) identify() (server, tool string) {
	var names []string
	if f, err := h.store.Read(); err == nil {
		for n := range f.Servers {
			names = append(names, n)
		}
	}
	if s, t, ok := mcpconfig.MatchTool(h.p.ToolName, names); ok && !strings.Contains(t, "__") {
		return s, t
	}
	r := h.resolve()
	names = append(names, r.Names...)
	if s, t, ok := mcpconfig.MatchTool(h.p.ToolName, names); ok {
		return s, t
	}
	s, t, _ := mcpconfig.SplitToolName(h.p.ToolName)
	return s, t
}

func (h *handler) resolve() *mcpconfig.Resolved {
	if h.resolved != nil {
		return h.resolved
	}
	k := h.env.Knobs
	cwd := h.p.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	h.resolved = mcpconfig.Resolve(k.ConfigOptions(cwd, h.env.Home, h.env.Getenv))
	secrets.RememberServers(h.resolved)
	for _, prob := range h.resolved.Problems {
		// An explicit file that is missing or broken is said every time:
		// the article lost a night to a typo read as "no config".
		if prob.Explicit {
			h.say(fmt.Sprintf("nightwatch: MCP config %s (from %s): %s", prob.Path, k.MCPConfig.Source, prob.Message))
		} else {
			h.say("nightwatch: MCP config " + prob.Path + ": " + prob.Message)
		}
	}
	return h.resolved
}

// lookup returns the server's definition and remembers its secrets for
// redaction.
func (h *handler) lookup(server string) *mcpconfig.Server {
	srv := h.resolve().Lookup(server)
	if srv != nil {
		h.secrets = append(h.secrets, srv.Secrets()...)
	}
	return srv
}

func (h *handler) redact(s string) string { return redact.String(s, h.secrets...) }

func (h *handler) probe(ctx context.Context, srv *mcpconfig.Server) probe.Result {
	k := h.env.Knobs
	ctx, cancel := context.WithTimeout(ctx, k.ProbeTimeout.V+time.Second)
	defer cancel()
	cwd := h.p.Cwd
	res := probe.Probe(ctx, srv, probe.Options{Timeout: k.ProbeTimeout.V, Cwd: cwd})
	res.Reason = h.redact(res.Reason)
	if len(srv.Missing) > 0 {
		res.Reason += fmt.Sprintf(" [unset variables in its config: %s]", strings.Join(srv.Missing, ", "))
	}
	h.log.Info().Str("server", srv.Name).Str("verdict", string(res.Verdict)).
		Dur("latency", res.Latency).Str("reason", res.Reason).Msg("probe")
	return res
}

func (h *handler) reconnect(ctx context.Context, server string) healthcheck.ReconnectResult {
	command, source := reconnect.CommandFor(server, h.env.Getenv)
	if command == "" {
		return healthcheck.ReconnectResult{}
	}
	argv, err := reconnect.Split(command)
	if err != nil {
		h.say(fmt.Sprintf("nightwatch: %s cannot be read as a command: %v", source, err))
		return healthcheck.ReconnectResult{Attempted: true, Detail: fmt.Sprintf("%s: %v", source, err)}
	}
	if syn := reconnect.ShellSyntax(command); len(syn) > 0 {
		h.say(fmt.Sprintf("nightwatch: %s uses shell syntax (%s) that nightwatch does not interpret; write sh -c '…' yourself if you need a shell",
			source, strings.Join(syn, ", ")))
	}
	out := reconnect.Run(ctx, reconnect.Expand(argv, server), reconnect.Options{
		Timeout: h.env.Knobs.ReconnectTimeout.V, Dir: h.p.Cwd, Secrets: h.secrets})
	detail := fmt.Sprintf("%s (%s)", strings.Join(out.Command, " "), out.Duration.Round(time.Millisecond))
	if !out.OK {
		detail += ": " + out.Err
	}
	if out.Output != "" {
		detail += ": " + shorten(out.Output, 200)
	}
	h.log.Info().Str("server", server).Bool("ok", out.OK).Str("detail", detail).Msg("reconnect")
	return healthcheck.ReconnectResult{Attempted: out.Attempted, OK: out.OK, Detail: detail}
}
