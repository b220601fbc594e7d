package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Upstream is the backend behind an MCP server whose handshake always
// works (a GitHub or Notion server whose API fails): while it is down,
// every tool call fails the way the MCP specification tells servers to
// report it. Tests switch it with SetDown while the server runs.
type Upstream struct {
	down atomic.Bool
}

// UpstreamFailure is the text of every failed call while the upstream is
// down, as a server relays its backend's 503.
const UpstreamFailure = "upstream returned 503 Service Unavailable"

// SetDown takes the upstream down (true) or brings it back (false).
func (u *Upstream) SetDown(down bool) { u.down.Store(down) }

// NewUpstreamServer returns an MCP server whose tools depend on u:
//
//	fetch {message}  returns message, or an isError result UpstreamFailure while u is down
//	query {message}  returns message, or a JSON-RPC error UpstreamFailure while u is down
//	fail {text}      an isError result with text, whatever u says (a tool's own error)
func NewUpstreamServer(u *Upstream) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: ServerName + "-upstream", Version: "0.0.1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "fetch", Description: "Fetches from the upstream."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			if u.down.Load() {
				res := text(UpstreamFailure)
				res.IsError = true
				return res, nil, nil
			}
			return text(in.Message), nil, nil
		})
	// The untyped handler makes a Go error a JSON-RPC error.
	s.AddTool(&mcp.Tool{Name: "query", Description: "Queries the upstream.",
		InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if u.down.Load() {
				return nil, errors.New(UpstreamFailure)
			}
			return text("query ok"), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Returns a tool error with the given text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			res := text(in.Text)
			res.IsError = true
			return res, nil, nil
		})
	return s
}

// NewUpstreamHandler serves NewUpstreamServer(u) over Streamable HTTP at
// StreamablePath.
func NewUpstreamHandler(u *Upstream) http.Handler {
	srv := NewUpstreamServer(u)
	mux := http.NewServeMux()
	mux.Handle(StreamablePath, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	return mux
}
