package reconnect

// Failure is the kind of trouble a probe or a failed tool call showed.
type Failure string

const (
	// Auth: 401/403 or "unauthorized" after a real tool call (the probe
	// itself treats 401/403 as reachable: it has no credentials).
	Auth Failure = "auth"
	// RateLimited: 429, "rate limit", "too many requests".
	RateLimited Failure = "rate-limited"
	// Unavailable: 500/502/503/504, "service unavailable", "overloaded".
	Unavailable Failure = "unavailable"
	// Transport: refused, DNS, reset, a stdio server that would not start.
	Transport Failure = "transport"
	// Timeout: the server did not answer in time.
	Timeout Failure = "timeout"
	// SessionExpired: the server no longer knows the MCP session.
	SessionExpired Failure = "session-expired"
	// NotMCP: something answered, but not an MCP server.
	NotMCP Failure = "not-mcp"
	// ToolError: the server answered; the tool itself failed.
	ToolError Failure = "tool-error"
	// Unknown: the failure could not be classified.
	Unknown Failure = "unknown"
)

// Failures lists every Failure, for tables and tests.
func Failures() []Failure {
	return []Failure{Auth, RateLimited, Unavailable, Transport, Timeout, SessionExpired, NotMCP, ToolError, Unknown}
}

// Action is what to do about a failure.
type Action string

const (
	// Reconnect: run the reconnect command, then probe again.
	Reconnect Action = "reconnect"
	// Wait: mark the server unhealthy and let the backoff run out before
	// the next probe.
	Wait Action = "wait"
	// None: the server is not at fault; leave its health alone.
	None Action = "none"
)

// Policy decides the Action for a Failure; haveCommand says whether a
// reconnect command is configured for the server. Like go-retryablehttp's
// CheckRetry, it is a plain function so that callers (and tests) can swap
// it; DefaultPolicy is the one nightwatch uses.
type Policy func(f Failure, haveCommand bool) Action

// policyRow is what DefaultPolicy does about one Failure.
type policyRow struct {
	withCommand    Action
	withoutCommand Action
}

// defaultPolicy is DefaultPolicy as a table. The Node original ran the
// reconnect command for 401, 403, 429 and 503 alike and did nothing
// special otherwise; these rows are why nightwatch differs.
var defaultPolicy = map[Failure]policyRow{
	// A real call was refused: the credentials expired or were revoked. A
	// reconnect command can re-authenticate (refresh a token, restart with
	// new ones). Without one, probing again with the same credentials
	// cannot help, so back off until someone or something fixes them.
	Auth: {withCommand: Reconnect, withoutCommand: Wait},

	// Never reconnect on 429, command or not. A restart does not reset the
	// server's quota, and the restart's re-probe spends more of it: the
	// 429 vicious circle of the Node original (429 → reconnect → probe →
	// 429 → failureCount up → …). Only waiting (Retry-After, backoff)
	// lets the limit recover.
	RateLimited: {withCommand: Wait, withoutCommand: Wait},

	// The server says it cannot serve now (503, overloaded). A local,
	// wedged server is fixed by a restart; a remote one recovers by itself,
	// so without a command wait.
	Unavailable: {withCommand: Reconnect, withoutCommand: Wait},

	// Nothing answered (refused, reset, DNS): the process is most likely
	// gone, which is exactly what a restart command fixes. Without one,
	// back off rather than hammer a dead port.
	Transport: {withCommand: Reconnect, withoutCommand: Wait},

	// A hung server: a restart unwedges it; otherwise wait, since every
	// probe of a hung server costs the whole probe timeout.
	Timeout: {withCommand: Reconnect, withoutCommand: Wait},

	// The server forgot our MCP session (it restarted, or evicted it).
	// Reconnecting re-establishes state; without a command, wait for the
	// client to start a new session.
	SessionExpired: {withCommand: Reconnect, withoutCommand: Wait},

	// Something that is not an MCP server holds the address (a proxy's
	// error page, another service on the port). Restarting the real server
	// may reclaim it; otherwise wait.
	NotMCP: {withCommand: Reconnect, withoutCommand: Wait},

	// The server answered and the tool failed (bad arguments, a missing
	// file): the server is healthy. Restarting or blocking it would punish
	// it for the caller's mistake.
	ToolError: {withCommand: None, withoutCommand: None},

	// Unclassified text: acting on a guess could restart a healthy server
	// or block it all night. Do nothing; the next probe gives a verdict.
	Unknown: {withCommand: None, withoutCommand: None},
}

// DefaultPolicy is nightwatch's Policy, the table above. A Failure it does
// not know gets None, like Unknown.
func DefaultPolicy(f Failure, haveCommand bool) Action {
	row, ok := defaultPolicy[f]
	if !ok {
		return None
	}
	if haveCommand {
		return row.withCommand
	}
	return row.withoutCommand
}
