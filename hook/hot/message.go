package hot

import (
	"fmt"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// Condition says in a few words what is wrong with a server.
func Condition(code healthcheck.FailureCode) string {
	switch code {
	case healthcheck.CodeAuth, "401", "403":
		return "failing authentication"
	case healthcheck.CodeRateLimited, "429":
		return "rate limited"
	case healthcheck.CodeUnavailable, "502", "503", "504":
		return "unavailable"
	case healthcheck.CodeTransport:
		return "unreachable"
	case healthcheck.CodeTimeout:
		return "not responding (timed out)"
	case healthcheck.CodeSessionExpired:
		return "losing its sessions"
	case healthcheck.CodeNotMCP:
		return "not answering as an MCP server"
	default:
		return "unhealthy"
	}
}

// BlockMessage is what the model reads when a call is blocked: that the
// block is deliberate, which server is down and why, until when, and what
// to do instead. Claude Code 2.1.332 puts "PreToolUse:<tool> hook error: "
// before it (2.1.197 showed it bare), so it says the hook did its job
// rather than failed ("… so this call was blocked on purpose"). The server
// name is quoted (Go syntax) and its tools are named by the normalized prefix Claude Code builds, so no
// character of a hostile name reaches the model unescaped; lastError was
// redacted before it was stored.
func BlockMessage(server string, e *healthcheck.Entry, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "nightwatch: MCP server %q is %s", server, Condition(e.LastFailureCode))
	if why := strings.TrimSpace(e.LastError); why != "" {
		// Bun's fetch appends advice for the programmer, not the model.
		why, _, _ = strings.Cut(why, " For more information, pass `verbose: true`")
		fmt.Fprintf(&b, " (%s)", text.Clip(why, 160))
	}
	b.WriteString(", so this call was blocked on purpose")
	prefix := mcpconfig.NormalizeName(server)
	until := e.NextRetryAt.Time()
	if until.After(now) {
		fmt.Fprintf(&b, ". Its tools (mcp__%s__*) are blocked until %s, %s from now.",
			prefix, until.UTC().Format(time.RFC3339), roundWait(until.Sub(now)))
	} else {
		fmt.Fprintf(&b, ". Its tools (mcp__%s__*) are blocked for now.", prefix)
	}
	fmt.Fprintf(&b, " Do not call them before then: continue with other tools, and report the part that needs %q as not done if it cannot wait.", server)
	return b.String()
}

func roundWait(d time.Duration) string {
	if d < time.Second {
		return "under a second"
	}
	return d.Round(time.Second).String()
}

// HeldMessage is BlockMessage for a call that was held waited seconds for
// its server, which did not come back: the model reads that nightwatch
// waited, so it does not wait again itself.
func HeldMessage(server string, e *healthcheck.Entry, now time.Time, waited time.Duration) string {
	msg := BlockMessage(server, e, now)
	held := fmt.Sprintf(", did not come back while this call waited %s for it", roundWait(waited))
	at := strings.Index(msg, ", so this call was blocked on purpose")
	if at < 0 {
		return msg
	}
	return msg[:at] + held + msg[at:]
}

// BackContext is what the model reads after a held call went ahead: the
// server was down and is back, and what it handed out before may be gone.
// restarted says how a new process replaced the one that was down
// (healthcheck.NewProcess; "" when nothing says so, as for an HTTP server).
func BackContext(server string, waited time.Duration, restarted string) string {
	if restarted != "" {
		return fmt.Sprintf("nightwatch: MCP server %q was down; this call waited %s for it and it is back as a new process (%s). "+
			"Ids, handles and sessions it returned before are gone: get them again rather than reuse them.",
			server, roundWait(waited), text.Clip(restarted, 160))
	}
	return fmt.Sprintf("nightwatch: MCP server %q was down; this call waited %s for it and it is back. "+
		"If it restarted, ids, handles and sessions it returned before may be gone: get them again rather than reuse them.",
		server, roundWait(waited))
}

// NewProcessContext is what the model reads before a call to a server
// that was down and that this call's own probe found back as a new process
// (how; healthcheck.HTTPRestart): the call was not held, its backoff had
// run out.
func NewProcessContext(server, how string) string {
	return fmt.Sprintf("nightwatch: MCP server %q was down and is back as a new process (%s). "+
		"Ids, handles and sessions it returned before are gone: get them again rather than reuse them.",
		server, text.Clip(how, 160))
}

// RepairContext is what the model reads after a call failed because its
// server went down, when nightwatch holds the next call for it: do not
// give up on the server, repeat the call only as its tool's hints allow
// (effects.Hints.Interrupted), and do not trust what it handed out before.
func RepairContext(server string, maxHold time.Duration, h effects.Hints) string {
	return fmt.Sprintf("nightwatch: MCP server %q went down during this call and is being restarted or waited for. "+
		"The next call to its tools (mcp__%s__*) will wait for it, up to %s, so do not give up on it. "+
		"This call did not complete: %s. Ids and handles it returned before may be gone.",
		server, mcpconfig.NormalizeName(server), roundWait(maxHold), h.Interrupted())
}
