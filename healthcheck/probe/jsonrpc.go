package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The probers write the few JSON-RPC messages of a handshake by hand: the
// go-sdk client is strict where Claude Code is lenient (a stray stdout line
// kills its session) and hides the HTTP status a verdict depends on.

// message is one JSON-RPC 2.0 message as read from a server: a request, a
// notification or a response.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// isResponse reports whether m answers a request (result or error).
func (m *message) isResponse() bool {
	return m.Method == "" && (m.Result != nil || m.Error != nil)
}

// answers reports whether m is the response to the request with id. Like
// the TypeScript SDK Claude Code uses (Number(response.id)), it matches
// ids numerically, so "1" and 1.0 answer request 1 too.
func (m *message) answers(id int64) bool {
	if !m.isResponse() {
		return false
	}
	var got any
	if err := json.Unmarshal(m.ID, &got); err != nil {
		return false
	}
	switch v := got.(type) {
	case float64:
		return v == float64(id)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil && f == float64(id)
	}
	return false
}

// hasNullID reports whether m is an error response that could not name the
// request it refuses (a parse error, a rejected HTTP request). Over HTTP,
// where an answer belongs to its request, that is still an answer.
func (m *message) hasNullID() bool {
	id := bytes.TrimSpace(m.ID)
	return m.Error != nil && (len(id) == 0 || string(id) == "null")
}

// parseMessages reads one JSON-RPC message, or a batch of them, from data.
// It reports ok=false when data is not well-formed JSON-RPC 2.0: not JSON, a
// wrong or missing "jsonrpc" member, or neither a method nor a result/error.
// Servers' stdout and HTTP bodies are untrusted, so this must never panic.
func parseMessages(data []byte) (msgs []message, ok bool) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, false
	}
	if data[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(data, &batch); err != nil || len(batch) == 0 {
			return nil, false
		}
		for _, raw := range batch {
			m, ok := parseMessage(raw)
			if !ok {
				return nil, false
			}
			msgs = append(msgs, m)
		}
		return msgs, true
	}
	m, ok := parseMessage(data)
	if !ok {
		return nil, false
	}
	return []message{m}, true
}

func parseMessage(data []byte) (message, bool) {
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		return message{}, false
	}
	if m.JSONRPC != "2.0" {
		return message{}, false
	}
	if m.Method == "" && m.Result == nil && m.Error == nil {
		return message{}, false
	}
	return m, true
}

// request is an outgoing JSON-RPC request; a notification when ID is nil.
type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      *int64 `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

func encodeRequest(id int64, method string, params any) []byte {
	return mustMarshal(request{JSONRPC: "2.0", ID: &id, Method: method, Params: params})
}

func encodeNotification(method string) []byte {
	return mustMarshal(request{JSONRPC: "2.0", Method: method})
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own fixed request types are marshalled.
		panic(fmt.Sprintf("probe: marshal %T: %v", v, err))
	}
	return b
}

// initializeParams is what Claude Code sends: its protocol version, roots
// and elicitation capabilities, and a client name.
func initializeParams() map[string]any {
	return map[string]any{
		"protocolVersion": ClientProtocolVersion,
		"capabilities": map[string]any{
			"roots":       map[string]any{},
			"elicitation": map[string]any{},
		},
		"clientInfo": map[string]any{"name": "nightwatch", "version": Version},
	}
}

// Version is nightwatch's version, sent as clientInfo.version and in the
// HTTP User-Agent. The main package sets it from build information.
var Version = "dev"

func userAgent() string { return "nightwatch/" + Version }

type initializeResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	ServerInfo      struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
}

type toolsListResult struct {
	Tools      []json.RawMessage `json:"tools"`
	NextCursor string            `json:"nextCursor"`
}

// maxToolPages bounds tools/list paging against a server whose cursor never
// runs out.
const maxToolPages = 20

// conversation is one transport's way to exchange messages with a server.
type conversation interface {
	// call sends a request and returns the response that answers it,
	// skipping anything else the server sends meanwhile.
	call(ctx context.Context, id int64, method string, params any) (*message, error)
	// notify sends a notification.
	notify(ctx context.Context, method string) error
	// protocolVersion tells the transport the version initialize settled on.
	setProtocolVersion(v string)
}

// handshake runs initialize (and tools/list when asked) over conv. An error
// means initialize got no JSON-RPC answer; the transport turns it into a
// verdict. Any answer, an error included, makes the result Healthy.
func handshake(ctx context.Context, conv conversation, opts Options, start time.Time) (Result, error) {
	resp, err := conv.call(ctx, 1, "initialize", initializeParams())
	if err != nil {
		return Result{}, err
	}
	res := Result{Verdict: Healthy, Latency: time.Since(start), Tools: -1}
	if resp.Error != nil {
		// A 2026-07-28 server answers initialize with "method not found";
		// the answer still proves a live MCP endpoint.
		res.Reason = fmt.Sprintf("answered initialize with JSON-RPC error %d: %s",
			resp.Error.Code, clip(resp.Error.Message, 200))
		return res, nil
	}
	var init initializeResult
	_ = json.Unmarshal(resp.Result, &init) // a result we cannot read is still an answer
	res.ServerName = clip(init.ServerInfo.Name, 100)
	res.ProtocolVersion = clip(init.ProtocolVersion, 40)
	res.Reason = "answered initialize"
	if res.ServerName != "" {
		res.Reason += " as " + res.ServerName
	}
	if res.ProtocolVersion != "" {
		res.Reason += " (protocol " + res.ProtocolVersion + ")"
	}
	pv := res.ProtocolVersion
	if pv == "" {
		pv = ClientProtocolVersion
	}
	conv.setProtocolVersion(pv)
	if !opts.ListTools {
		return res, nil
	}
	n, err := listTools(ctx, conv)
	if err != nil {
		res.Reason += "; tools/list failed: " + err.Error()
		return res, nil
	}
	res.Tools = n
	return res, nil
}

func listTools(ctx context.Context, conv conversation) (int, error) {
	if err := conv.notify(ctx, "notifications/initialized"); err != nil {
		return 0, fmt.Errorf("notifications/initialized: %w", err)
	}
	count := 0
	cursor := ""
	for page := 0; page < maxToolPages; page++ {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		resp, err := conv.call(ctx, int64(2+page), "tools/list", params)
		if err != nil {
			return 0, err
		}
		if resp.Error != nil {
			return 0, fmt.Errorf("JSON-RPC error %d: %s", resp.Error.Code, clip(resp.Error.Message, 200))
		}
		var list toolsListResult
		if err := json.Unmarshal(resp.Result, &list); err != nil {
			return 0, fmt.Errorf("unreadable result: %w", err)
		}
		count += len(list.Tools)
		if list.NextCursor == "" {
			return count, nil
		}
		cursor = list.NextCursor
	}
	return count, nil
}

// clip shortens s to at most n bytes for a reason, on a rune boundary,
// and flattens it to one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
