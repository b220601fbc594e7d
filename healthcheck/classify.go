package healthcheck

import (
	"regexp"
	"strings"
	"sync"

	// The probe vocabulary only: healthcheck links no prober (the hook's
	// hot path decides without net/http); callers pass probe.Probe.
	probe "github.com/nightwatch-dev/nightwatch/healthcheck/verdict"
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
	// Client is which of the client's own texts it is ("" for a server's
	// text).
	Client ClientKind
	// ServerAnswered: exec-server saw the server itself answer the call
	// with this failure (ClassifyAnswered), whatever the text says.
	ServerAnswered bool
	// NotWitness, set by Checker.RecordFailure, says why a failure that
	// would have counted or opened the server was not recorded: the
	// session it came from is no witness (Checker.NoWitness).
	NotWitness string
}

// The patterns are compiled on first use, not at start-up: most hook
// processes decide from the cache and never classify anything.
var (
	authPattern        = &lazyRegexp{expr: `(?i)\b40[13]\b|unauthori[sz]ed|forbidden|auth(?:entication|orization)?\s+(?:failed|expired|invalid|required)|invalid[_ ](?:api[_ ]?)?(?:key|token)|permission denied`}
	ratePattern        = &lazyRegexp{expr: `(?i)\b429\b|rate[ -]?limit|too many requests|quota exceeded`}
	unavailablePattern = &lazyRegexp{expr: `(?i)\b5\d\d\b|service unavailable|unavailable|bad gateway|gateway time-?out|overloaded|internal server error`}
	transportPattern   = &lazyRegexp{expr: `(?i)ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EPIPE|EHOSTUNREACH|socket hang up|connection (?:was )?(?:refused|failed|lost|reset|closed)|broken pipe|timed? ?out\b`}
	toolOwnPattern     = &lazyRegexp{expr: `(?i)\bENOENT\b|\bEACCES\b|\bEPERM\b|no such file|invalid argument|invalid param|\bEINVAL\b|not found|does not exist|\bEISDIR\b|\bENOTDIR\b|\bEEXIST\b|is a directory`}
	mcpErrorPrefix     = &lazyRegexp{expr: `^MCP error (-?\d+):\s?`}
	errnoPrefix        = &lazyRegexp{expr: `^(E[A-Z]+):\s?`}
)

// lazyRegexp is a regular expression compiled on first use. A package
// variable of it is laid out by the linker, with no code run at start-up
// (a closure per pattern cost every hook process about a hundred
// allocations before main).
type lazyRegexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

func (l *lazyRegexp) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.expr) })
	return l.re
}

// ClientKind names one of Claude Code's own texts for a call that failed in
// the client (reference 2.1.332 §1, in-flight §1.4 and §5).
type ClientKind string

// The client's texts, by what they say.
const (
	// ClientClosed: "Connection closed" (2.1.197: "MCP error -32000:
	// Connection closed"): the stdio server's pipe closed under the call;
	// fetch's "The socket connection was closed unexpectedly" for HTTP.
	ClientClosed ClientKind = "connection-closed"
	// ClientUnreachable: fetch's "Unable to connect. Is the computer able
	// to access the url?" (2.1.332 with "ECONNREFUSED: ").
	ClientUnreachable ClientKind = "unreachable"
	// ClientNotConnected: `MCP server "x" is not connected`: a stdio
	// server whose respawn failed (gone for the session), or 2.1.332's
	// HTTP transport closed after three failures (it reconnects by
	// itself).
	ClientNotConnected ClientKind = "not-connected"
	// ClientDisconnected: 2.1.332's "No such tool available: mcp__x__y.
	// Its MCP server 'x' has disconnected. …".
	ClientDisconnected ClientKind = "disconnected"
	// ClientNotRetried: 2.1.332's "No such tool available: mcp__x__y. MCP
	// server "x" did not connect when it was last tried, and is not tried
	// again for N s.": transient, its background reconnect goes on.
	ClientNotRetried ClientKind = "not-retried"
	// ClientConnecting: 2.1.197's "No such tool available: mcp__x__y. The
	// MCP server 'x' is still connecting. …".
	ClientConnecting ClientKind = "connecting"
	// ClientNoSuchTool: "No such tool available: mcp__x__y" with no word
	// of its server: a server that failed at start, or a wrong name.
	ClientNoSuchTool ClientKind = "no-such-tool"
	// ClientTriedAgain: 2.1.332's `Claude Code tried to connect to MCP
	// server "x" again and could not. …`.
	ClientTriedAgain ClientKind = "tried-again"
	// ClientTimeout: `MCP server "x" tool "y" timed out after Ns`.
	ClientTimeout ClientKind = "timeout"
	// ClientSessionExpired: `MCP server "x" session expired`.
	ClientSessionExpired ClientKind = "session-expired"
	// ClientAuth: the HTTP client's texts for a lost login.
	ClientAuth ClientKind = "auth"
	// ClientHTTP: "Error POSTing to endpoint: <body>" (2.1.197 with
	// "Streamable HTTP error: "), an HTTP error status whose code the
	// client dropped.
	ClientHTTP ClientKind = "http-error"
	// ClientNotMCP: "Unexpected content type: text/html".
	ClientNotMCP ClientKind = "not-mcp"
	// ClientSSE: the legacy SSE transport's errors.
	ClientSSE ClientKind = "sse"
	// ClientTaskResult: "Unsupported result type 'task' for tools/call": a
	// server answered a plain -p session with an MCP task, which is left
	// running, orphaned (in-flight §2.2).
	ClientTaskResult ClientKind = "task-result"
	// ClientNotGranted: "Claude requested permissions to use mcp__x__y, but
	// you haven't granted it yet.": a permission rule refused the call.
	ClientNotGranted ClientKind = "not-granted"
)

// ClientFailure is what one of the client's own texts says.
type ClientFailure struct {
	Kind ClientKind
	// Code is the health class of the text; "" for the texts that say
	// nothing of the server's health (a missing tool, a permission).
	Code FailureCode
	// Server and Tool are what the text names ("" where it names none;
	// Tool is the full mcp__x__y name or, in a timeout, the server's own).
	Server, Tool string
	// Text is the text without the wrapper and hint around it.
	Text string
	// Lost: the client could not get the call to or from its server (a
	// closed connection, an unreachable, lost or timed-out server): the
	// call was lost with its server. False for a missing tool, a
	// permission and a server that answered with a task.
	Lost bool
	// fetchOnly: only the HTTP client (fetch) writes it; from a stdio
	// server the same words are its tool's report of its upstream.
	fetchOnly bool
	rpcCode   string
}

// clientPattern is one of the client's texts: the whole text (anchored),
// or its start where the client appends a body it received.
type clientPattern struct {
	re        *lazyRegexp
	kind      ClientKind
	code      FailureCode
	lost      bool
	fetchOnly bool
	// server, tool: the submatch that names the server, the tool (0: none).
	server, tool int
}

var clientPatterns = []clientPattern{
	{re: &lazyRegexp{expr: `^Connection closed$`}, kind: ClientClosed, code: CodeTransport, lost: true},
	{re: &lazyRegexp{expr: `^The socket connection was closed unexpectedly\.?(?: For more information, pass ` + "`verbose: true`" + ` in the second argument to fetch\(\))?$`},
		kind: ClientClosed, code: CodeTransport, lost: true, fetchOnly: true},
	{re: &lazyRegexp{expr: `^Unable to connect\. Is the computer able to access the url\?$`}, kind: ClientUnreachable, code: CodeTransport, lost: true, fetchOnly: true},
	{re: &lazyRegexp{expr: `^MCP server "([^"]+)" is not connected\.?$`}, kind: ClientNotConnected, code: CodeTransport, lost: true, server: 1},
	{re: &lazyRegexp{expr: `^Claude Code tried to connect to MCP server "([^"]+)" again and could not\.?(?: It can be tried again in \d+ ?m?s\.)?$`},
		kind: ClientTriedAgain, code: CodeTransport, lost: true, server: 1},
	{re: &lazyRegexp{expr: `^MCP server "([^"]+)" tool "([^"]+)" timed out after \d+(?:\.\d+)? ?m?s\.?$`}, kind: ClientTimeout, code: CodeTimeout, lost: true, server: 1, tool: 2},
	{re: &lazyRegexp{expr: `^MCP server "([^"]+)" session expired\.?$`}, kind: ClientSessionExpired, code: CodeSessionExpired, lost: true, server: 1},
	{re: &lazyRegexp{expr: `^MCP server "([^"]+)" needs you to sign in again \(run /mcp to re-authenticate\)\.?$`}, kind: ClientAuth, code: CodeAuth, lost: true, server: 1},
	{re: &lazyRegexp{expr: `^MCP server "([^"]+)" requires re-authorization \(token expired\)\.?$`}, kind: ClientAuth, code: CodeAuth, lost: true, server: 1},
	{re: &lazyRegexp{expr: `^Dynamic Client Registration rejected \(HTTP \d+\):`}, kind: ClientAuth, code: CodeAuth, lost: true, fetchOnly: true},
	{re: &lazyRegexp{expr: `^HTTP \d+: Invalid OAuth error response:`}, kind: ClientAuth, code: CodeAuth, lost: true, fetchOnly: true},
	{re: &lazyRegexp{expr: `^Command failed with no output$`}, kind: ClientAuth, code: CodeAuth, lost: true, fetchOnly: true}, // an older client's 401
	{re: &lazyRegexp{expr: `^Error POSTing to endpoint:`}, kind: ClientHTTP, code: CodeUnavailable, lost: true, fetchOnly: true},
	{re: &lazyRegexp{expr: `^Unexpected content type: \S+$`}, kind: ClientNotMCP, code: CodeNotMCP, lost: true, fetchOnly: true},
	{re: &lazyRegexp{expr: `^SSE error:`}, kind: ClientSSE, code: CodeTransport, lost: true, fetchOnly: true},
	{re: &lazyRegexp{expr: `^Unsupported result type 'task' for tools/call\.?$`}, kind: ClientTaskResult, code: CodeNotMCP},
	// nightwatch's exec-server answered a call its server died under
	// (GuardRestarted): the call did not complete.
	{re: &lazyRegexp{expr: `^` + GuardRestarted + ` "([^"]+)"`}, kind: ClientClosed, code: CodeTransport, lost: true, server: 1},
	// exec-server gave the server up with this call in flight
	// (serverguard.LostError); a held call it never sent says "was not
	// sent" and is not lost with the server.
	{re: &lazyRegexp{expr: `^nightwatch: MCP server "([^"]+)" could not be brought back \(.*\): this call did not complete`}, kind: ClientClosed, code: CodeTransport, lost: true, server: 1},
	{re: &lazyRegexp{expr: `^Claude requested permissions to use ([A-Za-z0-9_-]+), but you haven't granted it yet\.$`}, kind: ClientNotGranted, tool: 1},
	// "No such tool available: <tool>", then what the client says of the
	// tool's server, if anything.
	{re: &lazyRegexp{expr: `^No such tool available: ([A-Za-z0-9_-]+)\. Its MCP server '([^']+)' has disconnected\.(?: [^\n]*)?$`},
		kind: ClientDisconnected, code: CodeTransport, lost: true, tool: 1, server: 2},
	{re: &lazyRegexp{expr: `^No such tool available: ([A-Za-z0-9_-]+)\. MCP server "([^"]+)" did not connect when it was last tried, and is not tried again for \d+ ?m?s\.$`},
		kind: ClientNotRetried, code: CodeTransport, lost: true, tool: 1, server: 2},
	{re: &lazyRegexp{expr: `^No such tool available: ([A-Za-z0-9_-]+)\. The MCP server '([^']+)' is still connecting\.(?: [^\n]*)?$`},
		kind: ClientConnecting, code: CodeTransport, lost: true, tool: 1, server: 2},
	{re: &lazyRegexp{expr: `^No such tool available: ([A-Za-z0-9_-]+)(?:\. [^\n]*)?$`}, kind: ClientNoSuchTool, tool: 1},
}

// TaskResultText is how Claude Code 2.1.332 fails a call that its server
// turned into an MCP task: "Unsupported result type 'task' for tools/call".
// 2.1.197 reads the same answer as an empty success and says nothing.
const TaskResultText = "Unsupported result type 'task'"

// schemaHint is how 2.1.332 starts what it appends to a failed call of a
// tool whose schema was deferred behind ToolSearch (reference §6.3).
const schemaHint = "\n\nThis tool's input schema was not in your prompt when you called it."

// ClientText says whether text, the error of a call that failed in the
// client (a PostToolUseFailure error, or a tool_result with is_error), is
// one of Claude Code's own texts, as a whole: in the tool_result's
// <tool_use_error>Error: …</tool_use_error> wrapper or not, with or
// without 2.1.332's appended schema hint and an optional "MCP error
// <code>: ", "Streamable HTTP error: " or errno ("ECONNREFUSED: ")
// prefix. A text that merely contains one of them (a server's isError
// text quoting it, a web page the tool fetched) is not the client's.
func ClientText(text string) (ClientFailure, bool) {
	t := strings.TrimSpace(text)
	if i := strings.Index(t, schemaHint); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	if inner, ok := strings.CutPrefix(t, "<tool_use_error>"); ok {
		if inner, ok = strings.CutSuffix(inner, "</tool_use_error>"); !ok {
			return ClientFailure{}, false
		}
		t = strings.TrimPrefix(strings.TrimSpace(inner), "Error: ")
	}
	whole := t
	t, rpcCode, _ := cutPrefixes(t)
	for _, p := range clientPatterns {
		m := p.re.get().FindStringSubmatch(t)
		if m == nil {
			continue
		}
		cf := ClientFailure{Kind: p.kind, Code: p.code, Text: whole, Lost: p.lost, fetchOnly: p.fetchOnly, rpcCode: rpcCode}
		if p.server > 0 {
			cf.Server = m[p.server]
		}
		if p.tool > 0 {
			cf.Tool = m[p.tool]
		}
		return cf, true
	}
	return ClientFailure{}, false
}

// Prefixes that name an HTTP transport's failure without saying which.
const postError = "Error POSTing to endpoint:"

// Classify reads the error text of a failed MCP call (PostToolUseFailure's
// error), as written by every supported Claude Code version. Only the
// client's own texts, whole (ClientText), open a server at once: the same
// words inside a server's message ("could not open note 'Connection
// closed'") are that server's answer, not the client's failure.
//
// On 2.1.332 a JSON-RPC error and a tool's isError text arrive alike,
// with no prefix: any other text may be either, from a server that is
// alive and answered. Such a text counts against the server only when it
// names a server or upstream condition (5xx, 429, refused, timed out),
// towards the consecutive-failure threshold; otherwise it is a tool's
// error (or tells nothing) and never marks a live server down, nor is it
// taken as proof that the server is fine.
func Classify(text string, transport mcpconfig.Transport) Classification {
	t := strings.TrimSpace(text)
	if t == "" {
		return Classification{Code: CodeUnknown, Ambiguous: true}
	}
	stdio := transport == mcpconfig.Stdio
	if cf, ok := ClientText(t); ok && cf.Code != "" && !(cf.fetchOnly && stdio) {
		cl := opens(cf.Code)
		if cf.Kind == ClientHTTP {
			_, body, _ := strings.Cut(t, postError)
			if c, ok := byPattern(body); ok {
				cl = opens(c)
			} else {
				cl = Classification{Code: CodeUnavailable, NeedsProbe: true, MarksUnhealthy: true}
			}
		}
		if cf.Kind == ClientClosed && !cf.fetchOnly && cf.Server == "" && transport != "" && !stdio {
			// "Connection closed" is what the client says of a stdio
			// server's pipe; over HTTP it says fetch's words, so these are
			// more likely the server's own answer: a probe decides.
			cl.NeedsProbe = true
		}
		cl.JSONRPC = cf.rpcCode != ""
		cl.Client = cf.Kind
		return cl
	}
	t, rpcCode, errno := cutPrefixes(t)
	cl := classifyRest(t, rpcCode, errno)
	cl.JSONRPC = rpcCode != ""
	return cl
}

// classifyRest classifies a text that is not the client's own: a
// server's message.
func classifyRest(t, rpcCode, errno string) Classification {
	if rpcCode == "-32001" {
		// The client's own request timeout (McpError -32001).
		return opens(CodeTimeout)
	}
	// A JSON-RPC error or a tool's isError text, which 2.1.332 writes
	// alike. A tool's own mistake is read first, so that a file name
	// holding "503" stays a tool error.
	whole := t
	if errno != "" {
		whole = errno + ": " + t
	}
	if toolOwnPattern.get().MatchString(whole) {
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
	case ratePattern.get().MatchString(s):
		return CodeRateLimited, true
	case authPattern.get().MatchString(s):
		return CodeAuth, true
	case unavailablePattern.get().MatchString(s):
		return CodeUnavailable, true
	case transportPattern.get().MatchString(s):
		if strings.Contains(strings.ToLower(s), "time") {
			return CodeTimeout, true
		}
		return CodeTransport, true
	}
	return "", false
}

// cutPrefixes takes off what the client puts before a failure's own text:
// "MCP error <code>: " (the JSON-RPC code), "Streamable HTTP error: " and an
// errno ("ECONNREFUSED: "), in any order, each once.
func cutPrefixes(t string) (rest, rpcCode, errno string) {
	for {
		if m := mcpErrorPrefix.get().FindStringSubmatch(t); m != nil && rpcCode == "" {
			rpcCode, t = m[1], t[len(m[0]):]
			continue
		}
		if r, ok := strings.CutPrefix(t, "Streamable HTTP error: "); ok {
			t = r
			continue
		}
		if m := errnoPrefix.get().FindStringSubmatch(t); m != nil && errno == "" {
			errno, t = m[1], t[len(m[0]):]
			continue
		}
		return t, rpcCode, errno
	}
}
