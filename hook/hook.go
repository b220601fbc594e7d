package hook

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/cluster/peers"
	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/hook/hot"
	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/serversecrets"
	"github.com/nightwatch-dev/nightwatch/internal/sessionstop"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/reconnect"
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
	// Environ is the whole environment the probes' stdio servers and the
	// reconnect commands start from, the one Getenv reads; nil means this
	// process's (a command hook's is its session's). The night's served
	// hook (hook/served) passes the session's.
	Environ []string
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
	p, err := hot.DecodeFor(env.Getenv, env.Stdin)
	if err != nil {
		fmt.Fprintf(env.Stderr, "nightwatch: %v; the call goes ahead unchecked\n", err)
		return ExitAllow
	}
	// Non-MCP tools leave at once: nothing else is read, nothing written.
	if !hot.MCP(p.ToolName) {
		return ExitAllow
	}
	h := newHandler(env, p)
	defer h.close()
	return h.handle(ctx)
}

type handler struct {
	env   Env
	p     *Payload
	event string
	store *healthcheck.Store
	// snap is the cache as read for this call, when identify read it.
	snap     *healthcheck.Snapshot
	checker  *healthcheck.Checker
	log      zerolog.Logger
	logFile  *os.File
	resolved *mcpconfig.Resolved
	secrets  []string
	// reconnector runs reconnect commands (the night uses the same Runner).
	reconnector *reconnect.Runner
}

func newHandler(env Env, p *Payload) *handler {
	h := &handler{env: env, p: p}
	k := env.Knobs
	for _, prob := range k.Problems {
		h.say("nightwatch: " + prob)
	}
	h.log = zerolog.Nop()
	if k.LogPath.V != "" {
		// Its folder is created like the cache's (0700); never through a
		// planted symlink, never waiting on a FIFO.
		_ = os.MkdirAll(filepath.Dir(k.LogPath.V), 0o700)
		f, err := atomicfile.OpenLog(k.LogPath.V)
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
	h.reconnector = &reconnect.Runner{
		Getenv:  env.Getenv,
		Timeout: k.ReconnectTimeout.V,
		Dir:     p.Cwd,
		Env:     env.Environ,
		Secrets: func(string) []string { return h.secrets },
		Warn:    h.say,
		Observe: func(server string, res healthcheck.ReconnectResult) {
			h.log.Info().Str("server", server).Bool("ok", res.OK).Str("detail", res.Detail).Msg("reconnect")
		},
	}
	// In a cluster, the host's relay grants the one probe and the one
	// trial across hosts. The client only dials when a decision needs a
	// claim: a decision the cache makes costs nothing more.
	var cluster healthcheck.Peers
	if path, ok := env.Getenv(peers.SocketEnv); ok && strings.TrimSpace(path) != "" {
		cluster = peers.New(path, 2*time.Second)
	}
	h.checker = healthcheck.New(h.store, k.Settings(), healthcheck.Options{
		Now:           h.now,
		Probe:         h.probe,
		HaveReconnect: h.reconnector.Have,
		Reconnect:     h.reconnector.Run,
		ProbeWait:     k.ProbeTimeout.V + k.ReconnectTimeout.V + 2*time.Second,
		EventsPath:    k.EventsPath.V,
		Warn:          h.say,
		Redact:        h.redact,
		StartsTrials:  true, // the hook decides for a real call
		Peers:         cluster,
		// A session nightwatch is stopping, or whose owner died, is no
		// witness: what its calls fail with is the stop, not the server.
		NoWitness: func() string { return sessionstop.Why(env.Getenv) },
		MaxHold:   func(server string) time.Duration { return k.MaxHoldFor(server, env.Getenv, h.say) },
	})
	return h
}

func (h *handler) close() {
	h.snap.Close()
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
		if code, denied := h.repeatDenied(server, tool); denied {
			return code
		}
		return h.preToolUse(ctx, server, tool)
	case PostToolUse:
		// A call its server only accepted as an MCP task is no proof of
		// health: the ledger is read only when the success would be written.
		var task *effects.Task
		h.checker.RecordCallSuccessIn(h.snap, server, func() *mcpconfig.Server { return h.lookup(server) },
			healthcheck.CallSuccess{TaskOnly: func() bool { task = h.acceptedTask(); return task != nil }})
		if task != nil {
			h.log.Info().Str("server", server).Str("task", task.ID).Msg("the call only accepted an MCP task: no health recorded")
		}
		h.recordEffect(server, tool)
	case PostToolUseFailure:
		srv := h.lookup(server)
		cl, e := h.checker.RecordCallFailure(ctx, server, srv, healthcheck.CallFailure{Text: h.p.Error,
			Answered: func() bool { return h.serverAnswered(server) }})
		h.recordTask(server, tool)
		ev := h.log.Info().Str("server", server).Str("class", string(cl.Code)).
			Bool("counts", cl.Counts).Bool("opens", cl.MarksUnhealthy).Bool("definition", srv != nil)
		if e != nil {
			ev = ev.Str("status", string(e.Status)).Int("consecutive", e.ConsecutiveFailures)
		}
		if cl.ServerAnswered {
			ev = ev.Bool("server_answered", true)
		}
		if cl.NotWitness != "" {
			ev = ev.Str("not_recorded", cl.NotWitness)
		}
		ev.Msg("call failed")
		// The next call to this server will be held for it: the model is
		// told so, or it takes the failure for the server's last word.
		if e != nil && cl.MarksUnhealthy && srv != nil {
			if hold := h.checker.HoldFor(server, e); hold > 0 {
				h.addContext(PostToolUseFailure, RepairContext(server, hold, effects.HintsFrom(h.env.Getenv, server, tool)))
			}
		}
	}
	// Post events record state; their exit code has no effect on a call
	// that already happened.
	return ExitAllow
}

func (h *handler) preToolUse(ctx context.Context, server, tool string) int {
	d := h.checker.DecideIn(ctx, h.snap, server, func() *mcpconfig.Server { return h.lookup(server) })
	h.snap.Close()
	h.snap = nil // whatever comes next reads the file as it is then
	if d.Note != "" {
		h.say("nightwatch: " + d.Note)
	}
	if d.Unchecked && h.p.ServerSource == "dynamic" {
		// 2.1.332 says where the server came from: a --mcp-config file the
		// hook is not told about.
		h.say(fmt.Sprintf("nightwatch: %q comes from the session's --mcp-config; name the same file in %s so nightwatch can probe it",
			server, knobs.EnvMCPConfig[0]))
	}
	var held *holdResult
	down := h.now()
	if d.Entry != nil && d.Entry.UnhealthySince != 0 {
		down = d.Entry.UnhealthySince.Time()
	}
	if !d.Allow && d.Hold > 0 && !h.env.Knobs.FailOpen.V {
		r := h.hold(ctx, server, tool, d)
		held, d = &r, r.d
		if d.Note != "" {
			h.say("nightwatch: " + d.Note)
		}
	}
	if d.Allow {
		h.log.Info().Str("server", server).Str("tool", tool).Bool("probed", d.Probed).Bool("trial", d.Trial).Msg("allow")
		// No permission decision: "allow" would grant a tool that
		// --allowedTools does not list (reference §1.5).
		if held != nil {
			h.addContext(PreToolUse, BackContext(server, held.waited, h.newProcess(server, down, d.Entry)))
		} else if how := h.probedBack(server, d); how != "" {
			h.addContext(PreToolUse, hot.NewProcessContext(server, how))
		}
		return ExitAllow
	}
	if d.Entry == nil {
		// Blocked without a record (the cache could not be written while a
		// trial was being started): say so rather than crash on it.
		d.Entry = &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, LastError: "its health could not be saved"}
	}
	msg := BlockMessage(server, d.Entry, h.now())
	if held != nil {
		msg = HeldMessage(server, d.Entry, h.now(), held.waited)
	}
	if fo := h.env.Knobs.FailOpen; fo.V {
		h.say(fmt.Sprintf("nightwatch: FAIL-OPEN (%s) lets this call to unhealthy server %q through; it would have been blocked: %s", fo.Source, server, msg))
		h.log.Warn().Str("server", server).Str("tool", tool).Msg("fail-open: allowed a call to an unhealthy server")
		return ExitAllow
	}
	hot.Blocked(h.checker.Events, h.p, server, d.Entry, h.now())
	h.log.Info().Str("server", server).Str("tool", tool).Str("code", string(d.Entry.LastFailureCode)).Msg("block")
	return hot.Deny(h.env.Stdout, h.env.Stderr, msg)
}

// identify finds the server a tool belongs to, from what the client says
// and never from tool_input (the model writes that): hot.Identify when
// the payload or the cache's names say it without doubt, else the
// configured names that fit the tool name Claude Code built, else the
// tool name's first "__" segment. The config is read only when a name
// could be ambiguous (it contains "__") or the cache does not have it.
func (h *handler) identify() (server, tool string) {
	if h.p.Server == "" {
		// The cache is read once for the call: its names here, the
		// server's entry for the decision (h.snap).
		h.snap = h.checker.Snapshot()
	}
	if s, t, ok := hot.Identify(h.p, h.snap); ok {
		return s, t
	}
	var names []string
	if h.snap.Err() == nil {
		names = h.snap.Names()
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
	serversecrets.RememberServers(h.resolved)
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
	res := probe.Probe(ctx, srv, probe.Options{Timeout: k.ProbeTimeout.V, Cwd: cwd, Environ: h.env.Environ})
	res.Reason = h.redact(res.Reason)
	if len(srv.Missing) > 0 {
		res.Reason += fmt.Sprintf(" [unset variables in its config: %s]", strings.Join(srv.Missing, ", "))
	}
	h.log.Info().Str("server", srv.Name).Str("verdict", string(res.Verdict)).
		Dur("latency", res.Latency).Str("reason", res.Reason).Msg("probe")
	return res
}
