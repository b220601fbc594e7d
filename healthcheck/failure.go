package healthcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// FailureCode is nightwatch's class of a failure: why a server was last
// marked unhealthy, in words the reconnect policy below reads directly. On
// disk it is the failureClass field; the article's lastFailureCode field
// holds ArticleCode of it (401, 403, 429, 503 or "transport").
type FailureCode string

// The failure classes: the one vocabulary of probes, call failures, the
// policy and the events file.
const (
	// CodeAuth: 401/403 or a lost login after a real tool call (the probe
	// itself treats 401/403 as reachable: it has no credentials).
	CodeAuth FailureCode = "auth"
	// CodeRateLimited: 429, "rate limit", "too many requests".
	CodeRateLimited FailureCode = "rate-limited"
	// CodeUnavailable: 5xx, "service unavailable", "overloaded".
	CodeUnavailable FailureCode = "unavailable"
	// CodeTransport: refused, DNS, reset, a closed connection, a stdio
	// server that would not start.
	CodeTransport FailureCode = "transport"
	// CodeTimeout: the server did not answer in time.
	CodeTimeout FailureCode = "timeout"
	// CodeSessionExpired: the server no longer knows the MCP session.
	CodeSessionExpired FailureCode = "session-expired"
	// CodeNotMCP: something answered, but not an MCP server.
	CodeNotMCP FailureCode = "not-mcp"
	// CodeToolError: the server answered; the tool itself failed.
	CodeToolError FailureCode = "tool-error"
	// CodeUnknown: the failure could not be classified.
	CodeUnknown FailureCode = "unknown"
)

// FailureCodes lists every class, for tables and tests.
func FailureCodes() []FailureCode {
	return []FailureCode{CodeAuth, CodeRateLimited, CodeUnavailable, CodeTransport, CodeTimeout,
		CodeSessionExpired, CodeNotMCP, CodeToolError, CodeUnknown}
}

// ArticleCode is the value of the article's lastFailureCode field: an HTTP
// status as a JSON number (401, 403, 429, 503) or the string "transport".
type ArticleCode string

// The article's values.
const (
	Article401       ArticleCode = "401"
	Article403       ArticleCode = "403"
	Article429       ArticleCode = "429"
	Article503       ArticleCode = "503"
	ArticleTransport ArticleCode = "transport"
)

// ArticleCodeOf is the article's lastFailureCode for a class; reason picks
// 403 over 401 for an auth failure that says so. The empty class has none.
func ArticleCodeOf(c FailureCode, reason string) ArticleCode {
	switch c {
	case "":
		return ""
	case CodeAuth, "401", "403":
		if c == "403" || (c != "401" && forbidden(reason)) {
			return Article403
		}
		return Article401
	case CodeRateLimited, "429":
		return Article429
	case CodeUnavailable, "500", "502", "503", "504":
		return Article503
	default:
		return ArticleTransport
	}
}

func forbidden(reason string) bool {
	r := strings.ToLower(reason)
	return strings.Contains(r, "403") || strings.Contains(r, "forbidden")
}

// ClassOfStored reads a lastFailureCode as files hold it: the article's
// numbers and "transport", or the words the previous nightwatch release
// wrote there.
func ClassOfStored(code string) FailureCode {
	switch code {
	case "":
		return ""
	case "401", "403":
		return CodeAuth
	case "429":
		return CodeRateLimited
	case "500", "502", "503", "504":
		return CodeUnavailable
	}
	for _, c := range FailureCodes() {
		if string(c) == code {
			return c
		}
	}
	return CodeUnknown
}

// MarshalJSON writes the article's form: a number for an HTTP status, a
// string otherwise, null for none.
func (a ArticleCode) MarshalJSON() ([]byte, error) {
	switch a {
	case "":
		return []byte("null"), nil
	case Article401, Article403, Article429, Article503:
		return []byte(a), nil
	}
	return json.Marshal(string(a))
}

// UnmarshalJSON reads a number, a string or null.
func (a *ArticleCode) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*a = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = ArticleCode(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("lastFailureCode: %w", err)
		}
		*a = ArticleCode(n.String())
	}
	return nil
}

// Action is what the reconnect policy says to do about a failure.
type Action string

const (
	// ActionReconnect: run the reconnect command, then probe again.
	ActionReconnect Action = "reconnect"
	// ActionWait: mark the server unhealthy and let the backoff run out
	// before the next probe.
	ActionWait Action = "wait"
	// ActionNone: the server is not at fault; leave its health alone.
	ActionNone Action = "none"
)

// Policy decides the Action for a class; haveCommand says whether a
// reconnect command is configured for the server. Like go-retryablehttp's
// CheckRetry it is a plain function, so callers and tests can swap it;
// DefaultPolicy is the one nightwatch uses.
type Policy func(code FailureCode, haveCommand bool) Action

type policyRow struct {
	withCommand    Action
	withoutCommand Action
}

// defaultPolicy is DefaultPolicy as a table. The Node original ran the
// reconnect command for 401, 403, 429 and 503 alike and did nothing
// special otherwise; these rows are why nightwatch differs.
var defaultPolicy = map[FailureCode]policyRow{
	// A real call was refused: the credentials expired or were revoked. A
	// reconnect command can re-authenticate (refresh a token, restart with
	// new ones). Without one, probing again with the same credentials
	// cannot help, so back off until someone or something fixes them.
	CodeAuth: {withCommand: ActionReconnect, withoutCommand: ActionWait},

	// Never reconnect on 429, command or not. A restart does not reset the
	// server's quota, and the restart's re-probe spends more of it: the
	// 429 vicious circle of the Node original (429 → reconnect → probe →
	// 429 → failureCount up → …). Only waiting (Retry-After, backoff)
	// lets the limit recover.
	CodeRateLimited: {withCommand: ActionWait, withoutCommand: ActionWait},

	// The server says it cannot serve now (503, overloaded). A local,
	// wedged server is fixed by a restart; a remote one recovers by itself,
	// so without a command wait.
	CodeUnavailable: {withCommand: ActionReconnect, withoutCommand: ActionWait},

	// Nothing answered (refused, reset, DNS): the process is most likely
	// gone, which is exactly what a restart command fixes. Without one,
	// back off rather than hammer a dead port.
	CodeTransport: {withCommand: ActionReconnect, withoutCommand: ActionWait},

	// A hung server: a restart unwedges it; otherwise wait, since every
	// probe of a hung server costs the whole probe timeout.
	CodeTimeout: {withCommand: ActionReconnect, withoutCommand: ActionWait},

	// The server forgot our MCP session (it restarted, or evicted it).
	// Reconnecting re-establishes state; without a command, wait for the
	// client to start a new session.
	CodeSessionExpired: {withCommand: ActionReconnect, withoutCommand: ActionWait},

	// Something that is not an MCP server holds the address (a proxy's
	// error page, another service on the port). Restarting the real server
	// may reclaim it; otherwise wait.
	CodeNotMCP: {withCommand: ActionReconnect, withoutCommand: ActionWait},

	// The server answered and the tool failed (bad arguments, a missing
	// file): the server is healthy. Restarting or blocking it would punish
	// it for the caller's mistake.
	CodeToolError: {withCommand: ActionNone, withoutCommand: ActionNone},

	// Unclassified text: acting on a guess could restart a healthy server
	// or block it all night. Do nothing; the next probe gives a verdict.
	CodeUnknown: {withCommand: ActionNone, withoutCommand: ActionNone},
}

// DefaultPolicy is nightwatch's Policy, the table above. A class it does
// not know gets ActionNone, like CodeUnknown.
func DefaultPolicy(code FailureCode, haveCommand bool) Action {
	row, ok := defaultPolicy[code]
	if !ok {
		return ActionNone
	}
	if haveCommand {
		return row.withCommand
	}
	return row.withoutCommand
}
