// Package hot is the hook's hot path: the calls the health cache answers
// alone (a cache hit, a cached block, a tool that is not MCP, a call that
// worked at a server known healthy), and the pieces the whole hook
// (package hook) shares with it: the payload, the server's name, the
// messages and the deny decision. It links no prober, logger or network
// client, so the nightwatch-hook executable, made of it, starts in about
// the time of an empty program; Answer says when a call needs the whole
// hook, before it has written or said anything.
package hot

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
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

// MCP says whether a tool is an MCP tool: every other tool goes ahead at
// once, nothing read, nothing written.
func MCP(toolName string) bool { return strings.HasPrefix(toolName, "mcp__") }

// LedgerOf is the session's side-effect ledger file and attempt (package
// effects); ok is false outside a job that keeps one.
func LedgerOf(getenv knobs.Getenv) (path string, attempt int, ok bool) {
	return effects.SessionLedger(getenv)
}

// DecodeFor reads the payload, with tool_input when the session keeps a
// ledger.
func DecodeFor(getenv knobs.Getenv, r io.Reader) (*Payload, error) {
	if _, _, ok := LedgerOf(getenv); ok {
		return DecodeInput(r)
	}
	return Decode(r)
}

// InputOf is the call's input for the ledger.
func InputOf(p *Payload) effects.Input {
	if p.InputCut {
		// Too large to keep: keyed by all its bytes, as effects.Key keys
		// what is not JSON.
		return effects.Input{Key: "raw:" + hex.EncodeToString(p.InputSum[:16])}
	}
	return effects.Input{Raw: []byte(p.Input), Key: effects.Key([]byte(p.Input))}
}

// RepeatOf is the earlier successful call of the job that a PreToolUse
// call repeats, when the tool is not read-only: the call is refused. Nil
// without a ledger, or when nothing is repeated; err when the ledger
// cannot be read (the call goes ahead, said).
func RepeatOf(getenv knobs.Getenv, p *Payload, server, tool string) (*effects.Call, error) {
	path, attempt, ok := LedgerOf(getenv)
	if !ok {
		return nil, nil
	}
	l, err := effects.Read(path)
	if err != nil {
		return nil, err
	}
	if l.AllowRepeat || len(l.Before(attempt)) == 0 || l.ReadOnly(server, tool) {
		return nil, nil
	}
	return l.Earlier(attempt, server, tool, InputOf(p).Key), nil
}

// Identify names the server of an MCP tool when the payload or the cache
// says it without doubt, from what the client says and never from
// tool_input (the model writes that): mcp_server.name when the payload
// has it (2.1.332 and later), else the tool name's segment after "mcp__"
// when it is the only one and the cache (sn) has that exact name: no
// other name can fit then (a longer one would need another "__", and one
// normalizing alike loses to the exact one: mcpconfig.MatchTool). ok is
// false otherwise: the whole hook lists the cache's names and reads the
// config. sn may be nil when the payload names the server.
func Identify(p *Payload, sn *healthcheck.Snapshot) (server, tool string, ok bool) {
	if p.Server != "" {
		prefix := "mcp__" + mcpconfig.NormalizeName(p.Server) + "__"
		if t, ok := strings.CutPrefix(p.ToolName, prefix); ok {
			return p.Server, t, true
		}
		_, t, _ := mcpconfig.SplitToolName(p.ToolName)
		return p.Server, t, true
	}
	if rest, ok := strings.CutPrefix(p.ToolName, "mcp__"); ok && sn != nil && sn.Err() == nil {
		if i := strings.Index(rest, "__"); i > 0 && len(rest) > i+2 && rest[i+2] != '_' && !strings.Contains(rest[i+2:], "__") && sn.Has(rest[:i]) {
			return rest[:i], rest[i+2:], true
		}
	}
	return "", "", false
}

// Deny writes a PreToolUse deny decision: the reason is what the model
// reads; stderr carries the same words for logs and for anyone reading
// the article's exit-2 output.
func Deny(stdout, stderr io.Writer, reason string) int {
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName":            PreToolUse,
		"permissionDecision":       "deny",
		"permissionDecisionReason": reason,
	}})
	fmt.Fprintln(stdout, string(out))
	fmt.Fprintln(stderr, reason)
	return ExitBlock
}

// Blocked is the events file's line for a call blocked because its server
// is down (e, its entry).
func Blocked(events *healthcheck.EventLog, p *Payload, server string, e *healthcheck.Entry, now time.Time) {
	events.Append(healthcheck.Event{Time: now, Kind: healthcheck.EventBlocked,
		Session: p.SessionID, ToolUseID: p.ToolUseID, Server: server, Tool: p.ToolName, Code: string(e.LastFailureCode),
		Reason: e.LastError, Until: e.NextRetryAt.Time()})
}

// Env is what the hot path reads of its process.
type Env struct {
	Getenv knobs.Getenv
	Stdout io.Writer
	Stderr io.Writer
	Now    func() time.Time
	// Knobs are the settings after flags were applied.
	Knobs knobs.Knobs
}

// Answer answers the call of payload p when the cache decides it alone,
// as the whole hook would (the same decision, output, events line and
// exit code): a tool that is not MCP; PreToolUse at a server healthy
// within its TTL, or blocked within its backoff with no hold possible and
// no repeat of a side effect to refuse; PostToolUse at a server that is
// healthy with more than half its TTL left, outside a job's ledger.
// Everything else (a miss that probes, a trial, a hold, a failure, a
// server named only by the config, a log file, a problem with a setting)
// is ok=false, with nothing written or said: the caller hands the call
// to the whole hook.
func Answer(env Env, p *Payload) (code int, ok bool) {
	if !MCP(p.ToolName) {
		return ExitAllow, true
	}
	k := env.Knobs
	// What the whole hook says or logs on its way, it says itself.
	if p.Event == "" || len(k.Problems) > 0 || k.LogPath.V != "" || k.FailOpen.V {
		return 0, false
	}
	if p.Event != PreToolUse && p.Event != PostToolUse {
		return 0, false
	}
	if _, _, ledger := LedgerOf(env.Getenv); ledger && p.Event == PostToolUse {
		return 0, false // the call goes into the ledger
	}
	now := env.Now
	if now == nil {
		now = time.Now
	}
	// Warnings are kept until the call is answered here: handed on, the
	// whole hook says them itself.
	var said []string
	warn := func(msg string) { said = append(said, msg) }
	store := &healthcheck.Store{Path: k.StatePath.V, Warn: warn, Now: now}
	reconnector := &reconnect.Runner{Getenv: env.Getenv}
	checker := healthcheck.New(store, k.Settings(), healthcheck.Options{
		Now:           now,
		HaveReconnect: reconnector.Have,
		Reconnect:     reconnector.Run,
		EventsPath:    k.EventsPath.V,
		Warn:          warn,
		MaxHold:       func(server string) time.Duration { return k.MaxHoldFor(server, env.Getenv, warn) },
	})
	sn := checker.Snapshot()
	defer sn.Close()
	server, tool, named := Identify(p, sn)
	if !named {
		return 0, false
	}
	g, e := checker.GateIn(sn, server)
	sn.Close()
	// answered says what was kept, in the order the whole hook says it:
	// before its decision.
	answered := func() {
		for _, msg := range said {
			fmt.Fprintln(env.Stderr, msg)
		}
		said = nil
	}
	if p.Event == PostToolUse {
		if checker.KnownHealthy(e) {
			answered()
			return ExitAllow, true
		}
		return 0, false
	}
	if earlier, err := RepeatOf(env.Getenv, p, server, tool); err != nil || earlier != nil {
		return 0, false
	}
	switch g {
	case healthcheck.GateAllow:
		answered()
		return ExitAllow, true
	case healthcheck.GateBlock:
		// A hold needs the server's definition and a probe: the whole
		// hook decides whether this call waits.
		if checker.HoldFor(server, e) > 0 {
			return 0, false
		}
		msg := BlockMessage(server, e, now())
		Blocked(checker.Events, p, server, e, now())
		answered()
		return Deny(env.Stdout, env.Stderr, msg), true
	}
	return 0, false
}
