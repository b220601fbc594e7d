package healthcheck

import (
	"testing"

	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// What a classification must conclude.
type want int

const (
	opensAtOnce want = iota // the client's own failure (or one to probe)
	counts                  // a server or upstream condition: counts toward the threshold
	toolError               // the tool's own mistake: never counted
	ambiguous               // nothing tells: neither a failure nor proof of health
)

func (w want) String() string {
	return [...]string{"opens at once", "counts", "tool error", "ambiguous"}[w]
}

func conclusion(c Classification) want {
	switch {
	case c.MarksUnhealthy:
		return opensAtOnce
	case c.Counts:
		return counts
	case c.ToolError:
		return toolError
	}
	return ambiguous
}

// TestClassifyReference holds every error text of the reference
// (claude-code-2.1.332.md §1a and §1b), as 2.1.197 and 2.1.332 write it,
// case name first.
func TestClassifyReference(t *testing.T) {
	const fetchHint = "For more information, pass `verbose: true` in the second argument to fetch()"
	tests := []struct {
		ref       string
		version   string
		text      string
		transport mcpconfig.Transport
		code      FailureCode
		want      want
		probe     bool
	}{
		// §1a stdio.
		{"s_iserr", "both", "STUB isError text", mcpconfig.Stdio, CodeUnknown, ambiguous, false},
		{"s_rpcerr", "2.1.197", "MCP error -32603: STUB rpc failure message", mcpconfig.Stdio, CodeToolError, toolError, false},
		{"s_rpcerr", "2.1.332", "STUB rpc failure message", mcpconfig.Stdio, CodeUnknown, ambiguous, false},
		{"s_fail503", "2.1.197", "MCP error -32000: upstream returned 503 Service Unavailable", mcpconfig.Stdio, CodeUnavailable, counts, false},
		{"s_fail503", "2.1.332", "upstream returned 503 Service Unavailable", mcpconfig.Stdio, CodeUnavailable, counts, false},
		{"g_untypederr", "2.1.197", "MCP error 0: GO untyped handler error", mcpconfig.Stdio, CodeToolError, toolError, false},
		{"g_untypederr", "2.1.332", "GO untyped handler error", mcpconfig.Stdio, CodeUnknown, ambiguous, false},
		{"g_typederr", "both", "GO typed handler error", mcpconfig.Stdio, CodeUnknown, ambiguous, false},
		{"s_die_then_echo", "2.1.197", "MCP error -32000: Connection closed", mcpconfig.Stdio, CodeTransport, opensAtOnce, false},
		{"s_die_then_echo", "2.1.332", "Connection closed", mcpconfig.Stdio, CodeTransport, opensAtOnce, false},
		{"guard_restart", "2.1.197", "MCP error -32000: nightwatch restarted MCP server \"s\" (exited with code 3): this call did not complete and was not repeated; ids and handles from before the restart may be gone; the call can be made again.", mcpconfig.Stdio, CodeTransport, opensAtOnce, false},
		{"guard_restart", "2.1.332", "nightwatch restarted MCP server \"s\" (hung: a request was outstanding for 1m0s and a ping got no answer within 20s): this call did not complete and was not repeated; ids and handles from before the restart may be gone; the call can be made again.", mcpconfig.Stdio, CodeTransport, opensAtOnce, false},
		{"guard_restart_not_idempotent", "2.1.332", "nightwatch restarted MCP server \"s\" (exited with code 3): this call did not complete and was not repeated; ids and handles from before the restart may be gone; it may have taken effect: check before repeating it.", mcpconfig.Stdio, CodeTransport, opensAtOnce, false},
		{"guard_lost", "2.1.197", "MCP error -32000: nightwatch: MCP server \"s\" could not be brought back (exited with code 3, and it was restarted 0 times within 10m0s): this call did not complete; it may have taken effect: check before repeating it.", mcpconfig.Stdio, CodeTransport, opensAtOnce, false},
		{"guard_lost", "2.1.332", "nightwatch: MCP server \"s\" could not be brought back (exited with code 3, and it was restarted 0 times within 10m0s): this call did not complete; the call can be made again.", mcpconfig.Stdio, CodeTransport, opensAtOnce, false},
		{"s_timeout_field", "both", `MCP server "notes" tool "hang" timed out after 2s`, mcpconfig.Stdio, CodeTimeout, opensAtOnce, false},
		{"sig_term_tool", "2.1.197", "MCP error -32000: Connection closed", mcpconfig.Stdio, CodeTransport, opensAtOnce, false},
		// in-flight §2.2 f2-force, measured again for issue 20 (the server answers tools/call with a task).
		{"f2_force", "2.1.332", "Unsupported result type 'task' for tools/call", mcpconfig.Stdio, CodeNotMCP, opensAtOnce, false},
		{"f2_force", "2.1.332", "Unsupported result type 'task' for tools/call", mcpconfig.HTTP, CodeNotMCP, opensAtOnce, false},
		// §1b Streamable HTTP.
		{"h_s503", "2.1.197", "Streamable HTTP error: Error POSTing to endpoint: STUB 503 body", mcpconfig.HTTP, CodeUnavailable, opensAtOnce, false},
		{"h_s503", "2.1.332", "Error POSTing to endpoint: STUB 503 body", mcpconfig.HTTP, CodeUnavailable, opensAtOnce, false},
		{"h_s503e", "2.1.197", "Streamable HTTP error: Error POSTing to endpoint:", mcpconfig.HTTP, CodeUnavailable, opensAtOnce, true},
		{"h_s503e", "2.1.332", "Error POSTing to endpoint:", mcpconfig.HTTP, CodeUnavailable, opensAtOnce, true},
		{"h_s503j", "2.1.197", `Streamable HTTP error: Error POSTing to endpoint: {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "STUB upstream unavailable"}}`, mcpconfig.HTTP, CodeUnavailable, opensAtOnce, false},
		{"h_s503j", "2.1.332", `Error POSTing to endpoint: {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "STUB upstream unavailable"}}`, mcpconfig.HTTP, CodeUnavailable, opensAtOnce, false},
		{"h_s429", "2.1.197", "Streamable HTTP error: Error POSTing to endpoint: STUB 429 body", mcpconfig.HTTP, CodeRateLimited, opensAtOnce, false},
		{"h_s429", "2.1.332", "Error POSTing to endpoint: STUB 429 body", mcpconfig.HTTP, CodeRateLimited, opensAtOnce, false},
		{"h_s500", "2.1.332", "Error POSTing to endpoint: STUB 500 body", mcpconfig.HTTP, CodeUnavailable, opensAtOnce, false},
		{"h_s403", "2.1.197", "Streamable HTTP error: Error POSTing to endpoint: STUB 403 body", mcpconfig.HTTP, CodeAuth, opensAtOnce, false},
		{"h_s403", "2.1.332", "Error POSTing to endpoint: STUB 403 body", mcpconfig.HTTP, CodeAuth, opensAtOnce, false},
		{"h_s401", "2.1.197", `MCP server "h" requires re-authorization (token expired)`, mcpconfig.HTTP, CodeAuth, opensAtOnce, false},
		{"h_s401", "2.1.332", `MCP server "h" needs you to sign in again (run /mcp to re-authenticate)`, mcpconfig.HTTP, CodeAuth, opensAtOnce, false},
		{"h_s401_plain", "2.1.197", "HTTP 404: Invalid OAuth error response: SyntaxError: JSON Parse error: Unexpected EOF. Raw body:", mcpconfig.HTTP, CodeAuth, opensAtOnce, false},
		{"h_s401_plain", "2.1.332", "Dynamic Client Registration rejected (HTTP 404):", mcpconfig.HTTP, CodeAuth, opensAtOnce, false},
		{"h_s404", "both", `MCP server "h" session expired`, mcpconfig.HTTP, CodeSessionExpired, opensAtOnce, false},
		{"h_html", "2.1.197", "Streamable HTTP error: Unexpected content type: text/html", mcpconfig.HTTP, CodeNotMCP, opensAtOnce, false},
		{"h_html", "2.1.332", "Unexpected content type: text/html", mcpconfig.HTTP, CodeNotMCP, opensAtOnce, false},
		{"h_kill_then_echo 1", "2.1.197", "The socket connection was closed unexpectedly. " + fetchHint, mcpconfig.HTTP, CodeTransport, opensAtOnce, false},
		{"h_kill_then_echo 1", "2.1.332", "ECONNRESET: The socket connection was closed unexpectedly. " + fetchHint, mcpconfig.HTTP, CodeTransport, opensAtOnce, false},
		{"h_kill_then_echo 2", "2.1.197", "Unable to connect. Is the computer able to access the url?", mcpconfig.HTTP, CodeTransport, opensAtOnce, false},
		{"h_kill_then_echo 2", "2.1.332", "ECONNREFUSED: Unable to connect. Is the computer able to access the url?", mcpconfig.HTTP, CodeTransport, opensAtOnce, false},
		// An HTTP server's own answer of exactly the stdio pipe's words:
		// the client says fetch's over HTTP, so a probe decides.
		{"h_own_closed", "2.1.197", "MCP error -32000: Connection closed", mcpconfig.HTTP, CodeTransport, opensAtOnce, true},
		{"h_own_closed", "2.1.332", "Connection closed", mcpconfig.HTTP, CodeTransport, opensAtOnce, true},
		{"h_own_closed", "2.1.332", "Connection closed", mcpconfig.SSE, CodeTransport, opensAtOnce, true},
		{"h_rpcerr", "2.1.197", "MCP error -32603: STUB rpc failure message", mcpconfig.HTTP, CodeToolError, toolError, false},
		{"h_rpcerr", "2.1.332", "STUB rpc failure message", mcpconfig.HTTP, CodeUnknown, ambiguous, false},
		{"h_iserr", "both", "STUB isError text", mcpconfig.HTTP, CodeUnknown, ambiguous, false},
		{"h_timeout_field", "both", `MCP server "h" tool "hang" timed out after 2s`, mcpconfig.HTTP, CodeTimeout, opensAtOnce, false},
		// Issue 9: a remote server Claude Code lost.
		{"lost", "2.1.332", `MCP server "x" is not connected`, mcpconfig.HTTP, CodeTransport, opensAtOnce, false},
		{"lost again", "2.1.332", `Claude Code tried to connect to MCP server "x" again and could not`, mcpconfig.HTTP, CodeTransport, opensAtOnce, false},
		{"older 401", "2.1.197", "Command failed with no output", mcpconfig.HTTP, CodeAuth, opensAtOnce, false},
	}
	for _, tt := range tests {
		t.Run(tt.ref+" "+tt.version, func(t *testing.T) {
			got := Classify(tt.text, tt.transport)
			if got.Code != tt.code || conclusion(got) != tt.want || got.NeedsProbe != tt.probe {
				t.Errorf("Classify(%q, %s) = %+v (%s), want %s %s probe %v", tt.text, tt.transport, got,
					conclusion(got), tt.code, tt.want, tt.probe)
			}
			// The same text from a server nightwatch has no definition of.
			if tt.want != ambiguous && conclusion(Classify(tt.text, "")) == ambiguous {
				t.Errorf("without a transport the text became ambiguous")
			}
		})
	}
}

// TestClassifyServerTexts: texts that are not the client's. A server or
// upstream condition counts; a tool's own mistake never does; nothing is
// ever read as "the server is fine" from the absence of a prefix.
func TestClassifyServerTexts(t *testing.T) {
	tests := []struct {
		text      string
		transport mcpconfig.Transport
		code      FailureCode
		want      want
	}{
		{"rate limit exceeded for this repo", mcpconfig.Stdio, CodeRateLimited, counts},
		{"GitHub API: 429 Too Many Requests", mcpconfig.Stdio, CodeRateLimited, counts},
		{"MCP error -32603: upstream returned 429 Too Many Requests", mcpconfig.Stdio, CodeRateLimited, counts},
		{"MCP error -32603: 401 Unauthorized: token expired", mcpconfig.Stdio, CodeAuth, counts},
		{"Notion is overloaded, try again later", mcpconfig.Stdio, CodeUnavailable, counts},
		{"502 Bad Gateway", mcpconfig.HTTP, CodeUnavailable, counts},
		{"MCP error -32603: service unavailable", mcpconfig.Stdio, CodeUnavailable, counts},
		{"ECONNREFUSED 127.0.0.1:5432 (database)", mcpconfig.Stdio, CodeTransport, counts},
		{"ECONNREFUSED: connect to the database", mcpconfig.Stdio, CodeTransport, counts}, // stdio: the tool's text
		{"upstream connection reset by peer", mcpconfig.Stdio, CodeTransport, counts},
		{"request to api.example.com timed out", mcpconfig.Stdio, CodeTimeout, counts},
		{"MCP error -32001: Request timed out", mcpconfig.Stdio, CodeTimeout, opensAtOnce},
		{"ENOENT: no such file or directory, open '/tmp/x'", mcpconfig.Stdio, CodeToolError, toolError},
		{"ENOENT: no such file or directory, open '/srv/upstream-503.log'", mcpconfig.Stdio, CodeToolError, toolError},
		{"MCP error 0: file not found", mcpconfig.Stdio, CodeToolError, toolError},
		{"EACCES: permission denied, open '/etc/shadow'", mcpconfig.Stdio, CodeToolError, toolError},
		{"invalid argument: limit must be positive", mcpconfig.Stdio, CodeToolError, toolError},
		{"MCP error -32602: Invalid params", mcpconfig.Stdio, CodeToolError, toolError},
		{"page 42 not found", mcpconfig.HTTP, CodeToolError, toolError},
		{"", mcpconfig.HTTP, CodeUnknown, ambiguous},
		{"Command failed with no output", mcpconfig.Stdio, CodeUnknown, ambiguous},
		{"The socket connection was closed unexpectedly", mcpconfig.Stdio, CodeTransport, counts}, // fetch's words from a stdio tool
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got := Classify(tt.text, tt.transport)
			if got.Code != tt.code || conclusion(got) != tt.want {
				t.Errorf("Classify(%q, %s) = %+v (%s), want %s %s", tt.text, tt.transport, got, conclusion(got), tt.code, tt.want)
			}
		})
	}
}

// FuzzClassify: any text (the client's, a server's or a hostile tool's)
// is classified without a panic, into exactly one conclusion.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"Connection closed", "MCP error -32000: Connection closed", "ECONNRESET: x",
		"Streamable HTTP error: Error POSTing to endpoint: 503", "MCP error 1: MCP error 2: E: ", "E: E: E:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tr := range []mcpconfig.Transport{"", mcpconfig.Stdio, mcpconfig.HTTP} {
			c := Classify(s, tr)
			n := 0
			for _, b := range []bool{c.MarksUnhealthy, c.Counts, c.ToolError, c.Ambiguous} {
				if b {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("Classify(%q, %s) = %+v: %d conclusions", s, tr, c, n)
			}
		}
	})
}

// TestClientTextExact holds the client's own texts for a failed call, as
// each supported version writes them (reference 2.1.332 §1, in-flight §1.4,
// §2.2, §3.1 and §5.1): in a PostToolUseFailure error, and in the
// tool_result the model gets (the <tool_use_error> wrapper, 2.1.332's
// schema hint).
func TestClientTextExact(t *testing.T) {
	const fetchHint = "For more information, pass `verbose: true` in the second argument to fetch()"
	const hint = "\n\nThis tool's input schema was not in your prompt when you called it. The input schema is: {\"type\":\"object\"}\n" +
		"If your input does not match this schema, correct it and call the tool again. If it matches, the error above has another cause. " +
		`If the corrected call fails the same way, call ToolSearch with query "select:mcp__notes__echo" to load the tool, then call it again.`
	tests := []struct {
		version, text string
		kind          ClientKind
		code          FailureCode
		server, tool  string
		lost          bool
	}{
		{"2.1.197", "MCP error -32000: Connection closed", ClientClosed, CodeTransport, "", "", true},
		{"2.1.332", "Connection closed", ClientClosed, CodeTransport, "", "", true},
		{"2.1.332", "Connection closed" + hint, ClientClosed, CodeTransport, "", "", true},
		{"2.1.197", "The socket connection was closed unexpectedly. " + fetchHint, ClientClosed, CodeTransport, "", "", true},
		{"2.1.332", "ECONNRESET: The socket connection was closed unexpectedly. " + fetchHint, ClientClosed, CodeTransport, "", "", true},
		{"2.1.197", "Unable to connect. Is the computer able to access the url?", ClientUnreachable, CodeTransport, "", "", true},
		{"2.1.332", "ECONNREFUSED: Unable to connect. Is the computer able to access the url?", ClientUnreachable, CodeTransport, "", "", true},
		{"both", `MCP server "s" is not connected`, ClientNotConnected, CodeTransport, "s", "", true},
		{"2.1.332", `Claude Code tried to connect to MCP server "h" again and could not. It can be tried again in 10 s.`, ClientTriedAgain, CodeTransport, "h", "", true},
		{"both", `MCP server "notes" tool "hang" timed out after 2s`, ClientTimeout, CodeTimeout, "notes", "hang", true},
		{"both", `MCP server "s" tool "echo" timed out after 15s`, ClientTimeout, CodeTimeout, "s", "echo", true},
		{"both", `MCP server "h" session expired`, ClientSessionExpired, CodeSessionExpired, "h", "", true},
		{"2.1.197", `MCP server "h" requires re-authorization (token expired)`, ClientAuth, CodeAuth, "h", "", true},
		{"2.1.332", `MCP server "h" needs you to sign in again (run /mcp to re-authenticate)`, ClientAuth, CodeAuth, "h", "", true},
		{"2.1.197", "Streamable HTTP error: Error POSTing to endpoint: STUB 503 body", ClientHTTP, CodeUnavailable, "", "", true},
		{"2.1.332", "Error POSTing to endpoint: STUB 503 body", ClientHTTP, CodeUnavailable, "", "", true},
		{"2.1.332", "Unsupported result type 'task' for tools/call", ClientTaskResult, CodeNotMCP, "", "", false},
		{"both", "Claude requested permissions to use mcp__s__echo, but you haven't granted it yet.", ClientNotGranted, "", "", "mcp__s__echo", false},
		{"both", "<tool_use_error>Error: No such tool available: mcp__dead__echo</tool_use_error>", ClientNoSuchTool, "", "", "mcp__dead__echo", false},
		{"2.1.197", "<tool_use_error>Error: No such tool available: mcp__slow__echo. The MCP server 'slow' is still connecting. Call WaitForMcpServers to wait for it, then try again.</tool_use_error>",
			ClientConnecting, CodeTransport, "slow", "mcp__slow__echo", true},
		{"2.1.332", "No such tool available: mcp__s__echo. Its MCP server 's' has disconnected. Continue without this tool; it becomes callable again only if the server reconnects.",
			ClientDisconnected, CodeTransport, "s", "mcp__s__echo", true},
		{"2.1.332", "<tool_use_error>Error: No such tool available: mcp__s__echo. Its MCP server 's' has disconnected. Continue without this tool; it becomes callable again only if the server reconnects.</tool_use_error>",
			ClientDisconnected, CodeTransport, "s", "mcp__s__echo", true},
		{"2.1.332", `<tool_use_error>Error: No such tool available: mcp__h__echo. MCP server "h" did not connect when it was last tried, and is not tried again for 6 s.</tool_use_error>`,
			ClientNotRetried, CodeTransport, "h", "mcp__h__echo", true},
	}
	for _, tt := range tests {
		t.Run(tt.version+" "+tt.text, func(t *testing.T) {
			got, ok := ClientText(tt.text)
			if !ok || got.Kind != tt.kind || got.Code != tt.code || got.Server != tt.server || got.Tool != tt.tool || got.Lost != tt.lost {
				t.Errorf("ClientText(%q) = %+v, %v; want %s %q server %q tool %q lost %v", tt.text, got, ok, tt.kind, tt.code, tt.server, tt.tool, tt.lost)
			}
		})
	}
}

// TestClientTextNotInside: the client's words inside a server's answer
// (a tool's isError text, a page it fetched) are not the client's: they
// never open a server at once.
func TestClientTextNotInside(t *testing.T) {
	for _, text := range []string{
		"could not open note 'Connection closed'",
		`The page says: MCP server "beta" is not connected`,
		`MCP server "beta" is not connected, said the ticket; please check`,
		"Claude requested permissions to use mcp__s__echo, but you haven't granted it yet. (quoted from issue #12)",
		"note: Claude requested permissions to use mcp__s__echo, but you haven't granted it yet.",
		"Connection closed by peer while reading the upstream",
		"see <tool_use_error>Error: No such tool available: mcp__x__y</tool_use_error>",
		"<tool_use_error>Error: No such tool available: mcp__x__y</tool_use_error> and more",
		`Timeout: MCP server "notes" tool "hang" timed out after 2s`,
		"ECONNREFUSED: connect to the database at 10.0.0.5:5432",
	} {
		if cf, ok := ClientText(text); ok {
			t.Errorf("ClientText(%q) = %+v: taken for the client's own text", text, cf)
		}
		for _, tr := range []mcpconfig.Transport{"", mcpconfig.Stdio, mcpconfig.HTTP} {
			if c := Classify(text, tr); c.MarksUnhealthy {
				t.Errorf("Classify(%q, %s) = %+v: a server's text opened it at once", text, tr, c)
			}
		}
	}
}
