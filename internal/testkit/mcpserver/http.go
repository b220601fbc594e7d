package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Paths of the two HTTP transports, as server-everything serves them.
const (
	StreamablePath = "/mcp"
	SSEPath        = "/sse"
)

// HTMLPage is the body of the html mode.
const HTMLPage = "<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>\n"

// HTTPOptions configure NewHTTPHandler.
type HTTPOptions struct {
	// Modes says which faults to inject; asked on every request. Nil
	// means always healthy.
	Modes ModeSource
	// SSE serves the legacy HTTP+SSE transport at SSEPath instead of
	// Streamable HTTP at StreamablePath.
	SSE bool
	// JSONResponse makes Streamable HTTP answer POSTs with
	// application/json rather than an event stream.
	JSONResponse bool
	// Stateless serves Streamable HTTP without sessions, which is what
	// lets the go-sdk speak 2026-07-28 over HTTP: server/discover lists it,
	// and requests must carry its headers (Mcp-Method).
	Stateless bool
	// Observe, when set, sees every request before any fault applies (a
	// test watches for DELETE or for headers). It must not read the body.
	Observe func(*http.Request)
	// Server tunes the MCP server behind the handler.
	Server Options
}

// NewHTTPHandler returns the test server as an http.Handler for
// httptest.NewServer: go-sdk's Streamable HTTP (or SSE) handler behind a
// middleware that injects the HTTP faults of the current mode.
func NewHTTPHandler(opts HTTPOptions) http.Handler {
	srv := NewServer(opts.Server)
	getServer := func(*http.Request) *mcp.Server { return srv }
	mux := http.NewServeMux()
	if opts.SSE {
		mux.Handle(SSEPath, mcp.NewSSEHandler(getServer, nil))
	} else {
		mux.Handle(StreamablePath, mcp.NewStreamableHTTPHandler(getServer,
			&mcp.StreamableHTTPOptions{JSONResponse: opts.JSONResponse, Stateless: opts.Stateless}))
	}
	modes := opts.Modes
	if modes == nil {
		modes = Fixed(Mode{})
	}
	return &faultHandler{next: mux, modes: modes, observe: opts.Observe}
}

type faultHandler struct {
	next    http.Handler
	modes   ModeSource
	observe func(*http.Request)

	mu   sync.Mutex
	warm time.Time // when slow-handshake's warm-up ends; zero before the first handshake
}

// warmAt is when the server is warm: d after the first handshake request.
func (h *faultHandler) warmAt(d time.Duration) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.warm.IsZero() {
		h.warm = time.Now().Add(d)
	}
	return h.warm
}

func (h *faultHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := h.modes()
	if h.observe != nil {
		h.observe(r)
	}
	if m.RequireHeader != "" && r.Header.Get(m.RequireHeader) != m.RequireValue {
		w.Header().Set("WWW-Authenticate", `Bearer realm="nwtestserver"`)
		writeStatus(w, http.StatusUnauthorized, m)
		return
	}
	switch {
	case m.Hang:
		// Read the body first: only then does net/http watch the
		// connection and cancel the request when the client goes away.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		return
	case m.HTML:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, HTMLPage)
		return
	case m.Status == http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate",
			fmt.Sprintf(`Bearer resource_metadata="http://%s/.well-known/oauth-protected-resource"`, r.Host))
		writeStatus(w, m.Status, m)
		return
	case m.Status == http.StatusTooManyRequests:
		retryAfter := m.RetryAfter
		if m.RetryAfterDate > 0 {
			retryAfter = time.Now().Add(m.RetryAfterDate).UTC().Format(http.TimeFormat)
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		writeStatus(w, m.Status, m)
		return
	case m.Status >= 300 && m.Status < 400:
		w.Header().Set("Location", "http://nightwatch.invalid/elsewhere")
		writeStatus(w, m.Status, m)
		return
	case m.Status != 0:
		writeStatus(w, m.Status, m)
		return
	case r.Method == http.MethodPost && (m.DiscoverOnly || m.Legacy || m.IgnoreDiscover || m.SlowHandshake > 0):
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		if m.SlowHandshake > 0 && (req.Method == "initialize" || req.Method == MethodDiscover) {
			select {
			case <-time.After(time.Until(h.warmAt(m.SlowHandshake))):
			case <-r.Context().Done():
				return
			}
		}
		switch {
		case req.Method == "initialize" && m.DiscoverOnly:
			w.Header().Set("Content-Type", "application/json")
			w.Write(methodNotFound(req.ID, req.Method))
			return
		case req.Method == MethodDiscover && m.IgnoreDiscover:
			<-r.Context().Done()
			return
		case req.Method == MethodDiscover && m.Legacy:
			// A 2025 TypeScript SDK server refuses a request without a
			// session this way.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(methodNotFound(req.ID, req.Method))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	h.next.ServeHTTP(w, r)
}

// writeStatus answers with code, as plain text, or with a JSON-RPC error
// body (id null) when the mode asks for rpc-body, as the TypeScript SDK
// does for 400/406.
func writeStatus(w http.ResponseWriter, code int, m Mode) {
	if !m.RPCBody {
		http.Error(w, http.StatusText(code), code)
		return
	}
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": -32000, "message": http.StatusText(code) + " (nwtestserver fault)"},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(body)
}
