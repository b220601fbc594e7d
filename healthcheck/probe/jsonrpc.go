package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/text"
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

// Version is nightwatch's version, sent as clientInfo.version and in the
// HTTP User-Agent. The main package sets it from build information.
var Version = "dev"

func userAgent() string { return "nightwatch/" + Version }

// clip is text.Clip: a reason bounded in bytes, on one line.
var clip = text.Clip
