package healthcheck

import (
	"testing"

	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		text      string
		transport mcpconfig.Transport
		code      FailureCode
		marks     bool
		probe     bool
	}{
		// The real client's texts (reference §1.4).
		{"STUB isError text", mcpconfig.Stdio, CodeToolError, false, false},
		{"rate limit exceeded for this repo", mcpconfig.Stdio, CodeToolError, false, false},
		{"MCP error -32603: STUB rpc failure message", mcpconfig.Stdio, CodeToolError, false, false},
		{"MCP error 0: file not found", mcpconfig.Stdio, CodeToolError, false, false},
		{"MCP error -32603: upstream returned 429 Too Many Requests", mcpconfig.Stdio, CodeRateLimited, true, false},
		{"MCP error -32603: 401 Unauthorized: token expired", mcpconfig.Stdio, CodeAuth, true, false},
		{"MCP error -32603: service unavailable", mcpconfig.Stdio, CodeUnavailable, true, false},
		{"MCP error -32000: Connection closed", mcpconfig.Stdio, CodeTransport, true, false},
		{"MCP error -32001: Request timed out", mcpconfig.Stdio, CodeTimeout, true, false},
		{`MCP server "stub" tool "hang" timed out after 2s`, mcpconfig.Stdio, CodeTimeout, true, false},
		{"Streamable HTTP error: Error POSTing to endpoint: ", mcpconfig.HTTP, CodeUnavailable, true, true},
		{"Streamable HTTP error: Error POSTing to endpoint: upstream hiccup", mcpconfig.HTTP, CodeUnavailable, true, true},
		{`Streamable HTTP error: Error POSTing to endpoint: {"jsonrpc":"2.0","error":{"code":-32000,"message":"Too Many Requests"},"id":null}`, mcpconfig.HTTP, CodeRateLimited, true, false},
		{"Streamable HTTP error: Error POSTing to endpoint: Service Unavailable", mcpconfig.HTTP, CodeUnavailable, true, false},
		{"Streamable HTTP error: Error POSTing to endpoint: Forbidden", mcpconfig.HTTP, CodeAuth, true, false},
		{"Command failed with no output", mcpconfig.HTTP, CodeAuth, true, false},
		{"Command failed with no output", mcpconfig.Stdio, CodeUnknown, false, false},
		{`MCP server "h" session expired`, mcpconfig.HTTP, CodeSessionExpired, true, false},
		{"Streamable HTTP error: Unexpected content type: text/html", mcpconfig.HTTP, CodeNotMCP, true, false},
		{"The socket connection was closed unexpectedly. For more information, pass `verbose: true` in the second argument to fetch()", mcpconfig.HTTP, CodeTransport, true, false},
		{"Unable to connect. Is the computer able to access the url?", mcpconfig.HTTP, CodeTransport, true, false},
		{"", mcpconfig.HTTP, CodeUnknown, false, false},
		// A tool may describe a socket error of its own upstream: still the
		// tool's report, the server answered.
		{"ECONNREFUSED 127.0.0.1:5432 (database)", mcpconfig.Stdio, CodeToolError, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got := Classify(tt.text, tt.transport)
			if got.Code != tt.code || got.MarksUnhealthy != tt.marks || got.NeedsProbe != tt.probe {
				t.Errorf("Classify(%q, %s) = %+v, want code %s marks %v probe %v", tt.text, tt.transport, got, tt.code, tt.marks, tt.probe)
			}
		})
	}
}
