// Package probe asks an MCP server, over its own transport, the question a
// real client asks first: will you answer an MCP handshake? It connects as
// Claude Code 2.1.332 does: server/discover (protocol 2026-07-28) first,
// initialize 2025-11-25 as the fallback the 2026-07-28 specification
// prescribes. One file per transport, one HTTP client and one redirect and
// credential rule (Wake, preflight's wake-up, uses them too); no prober
// touches the health cache, the state machine decides.
package probe

import (
	"crypto/x509"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck/verdict"
)

// The vocabulary lives in healthcheck/verdict, so that healthcheck's
// state machine (and the hook's hot path with it) links no prober; these
// are the same types and values under the names probers use.
type (
	Verdict   = verdict.Verdict
	Result    = verdict.Result
	Era       = verdict.Era
	ToolHints = verdict.ToolHints
)

const (
	Healthy      = verdict.Healthy
	AuthRequired = verdict.AuthRequired
	RateLimited  = verdict.RateLimited
	Unavailable  = verdict.Unavailable
	Transport    = verdict.Transport
	NotMCP       = verdict.NotMCP
	Unsupported  = verdict.Unsupported
	Modern       = verdict.Modern
	Legacy       = verdict.Legacy
)

// ClientProtocolVersion is what Claude Code sends in initialize, the
// fallback when a server does not speak ModernProtocolVersion.
const ClientProtocolVersion = "2025-11-25"

// ModernProtocolVersion is what Claude Code 2.1.332 asks for first, in
// server/discover.
const ModernProtocolVersion = "2026-07-28"

// maxHintedTools bounds the hints kept of one server.
const maxHintedTools = 1000

// Options tune one probe.
type Options struct {
	// Timeout bounds the whole probe, spawn to teardown. Default 5 s.
	Timeout time.Duration
	// ListTools also asks tools/list and counts the tools (costs a round
	// trip; the hook skips it, `nightwatch probe` and preflight ask).
	ListTools bool
	// Cwd is where a stdio server starts (the session's cwd).
	Cwd string
	// Environ is the environment a stdio server's base is taken from (the
	// session's); nil means os.Environ(). The server gets only its base
	// variables (environ.Base: PATH, HOME, locale, TMPDIR…) with its own
	// env laid over them: no other server's keys, no env_file value it was
	// not given, not the agent's credentials.
	Environ []string
	// InheritEnviron gives a stdio server the whole of Environ under its
	// own env, as an interactive Claude Code started by hand does. Only
	// doctor sets it, to compare "works in your shell" with the night;
	// nightwatch never starts a server so for a night, a hook or preflight.
	InheritEnviron bool

	// rootCAs replaces the system's certificate roots (tests' TLS servers).
	rootCAs *x509.CertPool
}
