// Package verdict is the vocabulary of a probe's outcome (Verdict,
// Result, Era, ToolHints), shared by the probers (healthcheck/probe, which
// names the same types) and the state machine (healthcheck). It links no
// prober, so the hook's hot path decides from the cache without linking
// net/http or crypto/tls.
package verdict

import "time"

// Verdict is what a probe learned about a server.
type Verdict string

const (
	// Healthy: a well-formed JSON-RPC answer to the handshake (an error
	// answer included: it proves an MCP endpoint).
	Healthy Verdict = "healthy"
	// AuthRequired: 401/403 to the probe. The endpoint is alive and guards
	// itself; the real client holds credentials the probe does not.
	AuthRequired Verdict = "auth-required"
	// RateLimited: 429. RetryAfter says how long the server asked to wait.
	RateLimited Verdict = "rate-limited"
	// Unavailable: 500/502/503/504, the server says it cannot serve now.
	Unavailable Verdict = "unavailable"
	// Transport: refused, DNS, timeout, spawn failure, a process that exits
	// or hangs before answering.
	Transport Verdict = "transport"
	// NotMCP: something answered, but not with JSON-RPC.
	NotMCP Verdict = "not-mcp"
	// Unsupported: nightwatch cannot probe this transport (ws).
	Unsupported Verdict = "unsupported"
)

// Reachable reports whether the verdict proves the server can be called.
func (v Verdict) Reachable() bool { return v == Healthy || v == AuthRequired }

// Result is one probe's outcome. A failing server is a Result with a
// reason, not an error.
type Result struct {
	Verdict Verdict `json:"verdict"`
	// Reason is short human text: what was seen, with the tail of the
	// server's stderr when it has one, secrets redacted.
	Reason string `json:"reason"`
	// Status is the HTTP status of the handshake answer, 0 for stdio.
	Status int `json:"status,omitempty"`
	// RetryAfter is the server's Retry-After, when it sent one.
	RetryAfter time.Duration `json:"retryAfter,omitempty"`
	Latency    time.Duration `json:"latency"`
	// Tools is the number of tools listed, or -1 when not asked or unknown.
	Tools int `json:"tools"`
	// ToolHints are the annotations tools/list gave, by tool name (only
	// tools that had some); nil when the tools were not listed. Kept out
	// of the cache: the night hands them to its jobs' side-effect ledgers.
	ToolHints map[string]ToolHints `json:"-"`
	// Era is how the server spoke: Modern (it answered server/discover with
	// a version the probe speaks) or Legacy (initialize). Empty when the
	// server gave no JSON-RPC answer.
	Era Era `json:"era,omitempty"`
	// ProtocolVersion is the negotiated version: the one chosen from
	// server/discover's list (modern) or initialize's answer (legacy).
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// SupportedVersions is what the server listed as supported, in its
	// order: server/discover's supportedVersions, or the "supported" list of
	// an UnsupportedProtocolVersionError. Nil when it listed none (a legacy
	// server that does not know server/discover).
	SupportedVersions []string `json:"supportedVersions,omitempty"`
	// LegacySSE is set when a type http URL turned out to serve the legacy
	// HTTP+SSE transport and the verdict comes from an SSE handshake, as
	// Claude Code 2.1.332 falls back to it (2.1.197 does not: the server is
	// "failed" there; the reason says so and suggests type sse).
	LegacySSE bool `json:"legacySSE,omitempty"`
	// SlowDiscover is set when server/discover went unanswered for the
	// probe's discover wait (the server ignores unknown requests, or is
	// slow to start): each Claude Code 2.1.332 session then waits about
	// 2.9 s before it falls back to initialize.
	SlowDiscover bool   `json:"slowDiscover,omitempty"`
	ServerName   string `json:"serverName,omitempty"`
	// TimedOutAfter is the probe's budget when a stdio server was still
	// running but had not answered when it ran out (a hang, or a start
	// slower than the budget); 0 otherwise. The Checker weighs it against
	// how long Claude Code itself waits for a server to start.
	TimedOutAfter time.Duration `json:"timedOutAfter,omitempty"`
	// Refused is set when an HTTP server's address refused the probe's
	// connection (ECONNREFUSED from the dialer, not a text): nothing
	// listened there, so whatever answers there later is a new listener.
	Refused bool `json:"refused,omitempty"`
}

// Era is the protocol era of a server, in the 2026-07-28 specification's
// words.
type Era string

const (
	// Modern: 2026-07-28 and later, version and identity on every request,
	// no initialize.
	Modern Era = "modern"
	// Legacy: 2025-11-25 and earlier, an initialize handshake.
	Legacy Era = "legacy"
)

// ToolHints are a tool's MCP annotations that say whether calling it
// changes anything; a nil field was not given.
type ToolHints struct {
	ReadOnly    *bool `json:"readOnlyHint,omitempty"`
	Destructive *bool `json:"destructiveHint,omitempty"`
	Idempotent  *bool `json:"idempotentHint,omitempty"`
}
