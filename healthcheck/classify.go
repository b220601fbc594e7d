package healthcheck

import (
	"regexp"
	"strings"
	"sync"

	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// CodeOfVerdict maps a failed probe to the class recorded for it.
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

// Classification is what a PostToolUseFailure error text says. Exactly one
// of MarksUnhealthy, Counts, ToolError and Ambiguous is true for a text that
// is not empty.
type Classification struct {
	Code FailureCode
	// MarksUnhealthy: the text is the client's own (a closed connection, a
	// refused socket, an HTTP error, a lost login): the client could not
	// use the server, so it opens at once.
	MarksUnhealthy bool
	// NeedsProbe: the client dropped the HTTP status from its text, so the
	// server must be asked what it is.
	NeedsProbe bool
	// Counts: the text names a server or upstream condition (5xx, 429,
	// overloaded, refused, timed out) but may be a tool's own message
	// about its upstream, as a JSON-RPC error and an isError result read
	// alike on 2.1.332. It counts towards the consecutive-failure
	// threshold (Envoy's consecutive_5xx) instead of opening at once.
	Counts bool
	// ToolError: the tool failed by itself (no such file, invalid
	// argument, not found): never counted against the server.
	ToolError bool
	// Ambiguous: nothing in the text tells. It is neither a failure of the
	// server nor proof that the server is fine: it neither counts nor
	// resets the count.
	Ambiguous bool
	// JSONRPC is true when a version that says so (2.1.197's "MCP error
	// <code>: ") marked the text as a JSON-RPC error.
	JSONRPC bool
	// NotWitness, set by Checker.RecordFailure, says why a failure that
	// would have counted or opened the server was not recorded: the
	// session it came from is no witness (Checker.NoWitness).
	NotWitness string
}

// The patterns are compiled on first use, not at start-up: most hook
// processes decide from the cache and never classify anything.
var (
	authPattern        = lazyRegexp(`(?i)\b40[13]\b|unauthori[sz]ed|forbidden|auth(?:entication|orization)?\s+(?:failed|expired|invalid|required)|invalid[_ ](?:api[_ ]?)?(?:key|token)|permission denied`)
	ratePattern        = lazyRegexp(`(?i)\b429\b|rate[ -]?limit|too many requests|quota exceeded`)
	unavailablePattern = lazyRegexp(`(?i)\b5\d\d\b|service unavailable|unavailable|bad gateway|gateway time-?out|overloaded|internal server error`)
	transportPattern   = lazyRegexp(`(?i)ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EPIPE|EHOSTUNREACH|socket hang up|connection (?:was )?(?:refused|failed|lost|reset|closed)|broken pipe|timed? ?out\b`)
	toolOwnPattern     = lazyRegexp(`(?i)\bENOENT\b|\bEACCES\b|\bEPERM\b|no such file|invalid argument|invalid param|\bEINVAL\b|not found|does not exist|\bEISDIR\b|\bENOTDIR\b|\bEEXIST\b|is a directory`)
	mcpErrorPrefix     = lazyRegexp(`^MCP error (-?\d+):\s?`)
	errnoPrefix        = lazyRegexp(`^(E[A-Z]+):\s?`)
	clientToolTimeout  = lazyRegexp(`MCP server ".*" tool ".*" timed out after`)
)

func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// clientText is one of the client's own texts, matched anywhere in the
// message once its optional prefixes are gone (reference 2.1.332 §1).
type clientText struct {
	text string
	code FailureCode
	// fetchOnly: only Claude Code's HTTP client (fetch) writes it; from a
	// stdio server the same words are its tool's report of its upstream.
	fetchOnly bool
}

var clientTexts = []clientText{
	{"Connection closed", CodeTransport, false},
	{GuardRestarted, CodeTransport, false}, // exec-server: the server died under the call
	{"The socket connection was closed unexpectedly", CodeTransport, true},
	{"Unable to connect", CodeTransport, true},
	{`" is not connected`, CodeTransport, false},             // MCP server "x" is not connected
	{"tried to connect to MCP server", CodeTransport, false}, // … "x" again and could not
	{`" session expired`, CodeSessionExpired, false},         // MCP server "x" session expired
	{"needs you to sign in again", CodeAuth, false},          // 2.1.332's HTTP 401
	{"requires re-authorization", CodeAuth, false},           // 2.1.197's HTTP 401
	{"Dynamic Client Registration rejected", CodeAuth, true}, // 2.1.332, 401 with a failed DCR
	{"Invalid OAuth error response", CodeAuth, true},         // 2.1.197, the same
	{"Unexpected content type", CodeNotMCP, true},            // a proxy's HTML page
	{"SSE error", CodeTransport, true},                       // the legacy transport
	// 2.1.332, a server that answered tools/call with an MCP task the
	// session did not ask for: a protocol failure of the server, whose
	// task runs on unfollowed (reference in-flight §2.2, f2-force).
	{TaskResultText, CodeNotMCP, false},
}

// TaskResultText is how Claude Code 2.1.332 fails a call that its server
// turned into an MCP task: "Unsupported result type 'task' for tools/call".
// 2.1.197 reads the same answer as an empty success and says nothing.
const TaskResultText = "Unsupported result type 'task'"

// Prefixes that name an HTTP transport's failure without saying which.
const postError = "Error POSTing to endpoint:"

// Classify reads the error text of a failed MCP call, as written by every
// supported Claude Code version: it strips the optional prefixes
// ("MCP error <code>: ", "Streamable HTTP error: ", an errno such as
// "ECONNREFUSED: "), then looks for the client's own transport and auth
// texts anywhere in what is left. Text that is not the client's may be a
// JSON-RPC error or a tool's isError text (2.1.332 writes both bare): it
// counts against the server only when it names a server or upstream
// condition, and it is never taken as proof that the server is fine.
func Classify(text string, transport mcpconfig.Transport) Classification {
	t := strings.TrimSpace(text)
	if t == "" {
		return Classification{Code: CodeUnknown, Ambiguous: true}
	}
	stdio := transport == mcpconfig.Stdio
	rpcCode, errno := "", ""
	for {
		if m := mcpErrorPrefix().FindStringSubmatch(t); m != nil && rpcCode == "" {
			rpcCode, t = m[1], t[len(m[0]):]
			continue
		}
		if rest, ok := strings.CutPrefix(t, "Streamable HTTP error: "); ok {
			t = rest
			continue
		}
		if m := errnoPrefix().FindStringSubmatch(t); m != nil && errno == "" {
			errno, t = m[1], t[len(m[0]):]
			continue
		}
		break
	}
	cl := classifyRest(t, rpcCode, errno, stdio, transport)
	cl.JSONRPC = rpcCode != ""
	return cl
}

func classifyRest(t, rpcCode, errno string, stdio bool, transport mcpconfig.Transport) Classification {
	// Without a definition the transport is unknown: it may be remote.
	remote := !stdio
	switch {
	case rpcCode == "-32001":
		// The client's own request timeout (McpError -32001).
		return opens(CodeTimeout)
	case (errno == "ECONNREFUSED" || errno == "ECONNRESET") && !stdio:
		// 2.1.332's fetch errors; a stdio server has no socket to the
		// client, so from one this is its tool's text.
		return opens(CodeTransport)
	case clientToolTimeout().MatchString(t):
		return opens(CodeTimeout)
	case strings.Contains(t, postError):
		_, body, _ := strings.Cut(t, postError)
		if c, ok := byPattern(body); ok {
			return opens(c)
		}
		return Classification{Code: CodeUnavailable, NeedsProbe: true, MarksUnhealthy: true}
	case strings.HasPrefix(t, "Command failed with no output"):
		// An older client's whole text for an HTTP 401 on a call.
		if remote {
			return opens(CodeAuth)
		}
		return Classification{Code: CodeUnknown, Ambiguous: true}
	}
	for _, ct := range clientTexts {
		if ct.fetchOnly && stdio {
			continue
		}
		if strings.Contains(t, ct.text) {
			return opens(ct.code)
		}
	}
	// What is left is a server's message: a JSON-RPC error or a tool's
	// isError text, which 2.1.332 writes alike. A tool's own mistake is
	// read first, so that a file name holding "503" stays a tool error.
	whole := t
	if errno != "" {
		whole = errno + ": " + t
	}
	if toolOwnPattern().MatchString(whole) {
		return Classification{Code: CodeToolError, ToolError: true}
	}
	if c, ok := byPattern(whole); ok {
		return Classification{Code: c, Counts: true}
	}
	if rpcCode != "" {
		// 2.1.197 said it is a JSON-RPC error: a well-formed answer of a
		// server that is alive, whatever its message.
		return Classification{Code: CodeToolError, ToolError: true}
	}
	return Classification{Code: CodeUnknown, Ambiguous: true}
}

func opens(c FailureCode) Classification {
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
		if strings.Contains(strings.ToLower(s), "time") {
			return CodeTimeout, true
		}
		return CodeTransport, true
	}
	return "", false
}
