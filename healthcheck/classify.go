package healthcheck

import (
	"regexp"
	"strings"
	"sync"

	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// Failure codes nightwatch writes to lastFailureCode. They are the words of
// reconnect.Failure, so the policy table reads them directly.
const (
	CodeAuth           FailureCode = "auth"
	CodeRateLimited    FailureCode = "rate-limited"
	CodeUnavailable    FailureCode = "unavailable"
	CodeTransport      FailureCode = "transport"
	CodeTimeout        FailureCode = "timeout"
	CodeSessionExpired FailureCode = "session-expired"
	CodeNotMCP         FailureCode = "not-mcp"
	CodeToolError      FailureCode = "tool-error"
	CodeUnknown        FailureCode = "unknown"
)

// CodeOfVerdict maps a failed probe to the code recorded for it.
func CodeOfVerdict(v probe.Verdict) FailureCode {
	switch v {
	case probe.RateLimited:
		return CodeRateLimited
	case probe.Unavailable:
		return CodeUnavailable
	case probe.NotMCP:
		return CodeNotMCP
	case probe.AuthRequired:
		return CodeAuth
	default:
		return CodeTransport
	}
}

// Classification is what a PostToolUseFailure error text says.
type Classification struct {
	Code FailureCode
	// NeedsProbe: the text cannot tell the cause (Claude Code drops HTTP
	// status codes from its messages), so the server must be asked.
	NeedsProbe bool
	// MarksUnhealthy is false for failures of the tool, not the server.
	MarksUnhealthy bool
}

// The patterns are compiled on first use, not at start-up: most hook
// processes decide from the cache and never classify anything.
var (
	authPattern        = lazyRegexp(`(?i)\b40[13]\b|unauthori[sz]ed|forbidden|auth(?:entication|orization)?\s+(?:failed|expired|invalid|required)|invalid[_ ](?:api[_ ]?)?(?:key|token)|permission denied`)
	ratePattern        = lazyRegexp(`(?i)\b429\b|rate[ -]?limit|too many requests|quota exceeded`)
	unavailablePattern = lazyRegexp(`(?i)\b50[0234]\b|service unavailable|bad gateway|gateway time-?out|overloaded|temporarily unavailable|internal server error`)
	transportPattern   = lazyRegexp(`(?i)ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|EPIPE|socket hang up|connection (?:refused|failed|lost|reset|closed)|broken pipe`)
	mcpErrorPrefix     = lazyRegexp(`^MCP error (-?\d+):\s?`)
	toolTimedOut       = lazyRegexp(`^MCP server ".*" tool ".*" timed out after`)
	sessionExpired     = lazyRegexp(`^MCP server ".*" session expired`)
)

func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

const httpPostPrefix = "Streamable HTTP error: Error POSTing to endpoint:"

// Classify reads the error text of a failed MCP call. The texts are the
// real client's (reference §1.4): anything that does not carry one of its
// transport or protocol prefixes is the tool's own isError text, and a tool
// that reports an error is a server that works.
func Classify(text string, transport mcpconfig.Transport) Classification {
	t := strings.TrimSpace(text)
	remote := transport == mcpconfig.HTTP || transport == mcpconfig.SSE
	switch {
	case t == "":
		return Classification{Code: CodeUnknown}
	case strings.HasPrefix(t, "MCP error -32000: Connection closed"):
		return unhealthy(CodeTransport)
	case strings.HasPrefix(t, "MCP error -32001"):
		return unhealthy(CodeTimeout)
	case toolTimedOut().MatchString(t):
		return unhealthy(CodeTimeout)
	case sessionExpired().MatchString(t):
		return unhealthy(CodeSessionExpired)
	case strings.HasPrefix(t, "Command failed with no output"):
		// The client's whole text for an HTTP 401 on a call.
		if remote {
			return unhealthy(CodeAuth)
		}
		return Classification{Code: CodeUnknown}
	case strings.HasPrefix(t, "Streamable HTTP error: Unexpected content type"):
		return unhealthy(CodeNotMCP)
	case strings.HasPrefix(t, httpPostPrefix):
		body := strings.TrimSpace(strings.TrimPrefix(t, httpPostPrefix))
		if c, ok := byPattern(body); ok {
			return unhealthy(c)
		}
		return Classification{Code: CodeUnavailable, NeedsProbe: true, MarksUnhealthy: true}
	case strings.HasPrefix(t, "Unable to connect"),
		strings.HasPrefix(t, "The socket connection was closed unexpectedly"),
		strings.HasPrefix(t, "SSE error"):
		return unhealthy(CodeTransport)
	}
	if m := mcpErrorPrefix().FindStringSubmatch(t); m != nil {
		// A JSON-RPC error is a well-formed answer: the server is alive
		// unless its message names a condition of the server itself.
		if c, ok := byPattern(t[len(m[0]):]); ok {
			return unhealthy(c)
		}
		return Classification{Code: CodeToolError}
	}
	return Classification{Code: CodeToolError}
}

func unhealthy(c FailureCode) Classification {
	return Classification{Code: c, MarksUnhealthy: true}
}

func byPattern(s string) (FailureCode, bool) {
	switch {
	case ratePattern().MatchString(s):
		return CodeRateLimited, true
	case authPattern().MatchString(s):
		return CodeAuth, true
	case unavailablePattern().MatchString(s):
		return CodeUnavailable, true
	case transportPattern().MatchString(s):
		return CodeTransport, true
	}
	return "", false
}
