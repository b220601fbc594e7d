package hook

import (
	"fmt"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// condition says in a few words what is wrong with a server.
func condition(code healthcheck.FailureCode) string {
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
	fmt.Fprintf(&b, "nightwatch: MCP server %q is %s", server, condition(e.LastFailureCode))
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
