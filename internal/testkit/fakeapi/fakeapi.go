// Package fakeapi is a scripted fake of the Anthropic Messages API, for
// end-to-end tests that run the real Claude Code CLI with ANTHROPIC_BASE_URL
// pointed at it.
//
// The "model" is scripted by the prompt. Every line of the first user
// message of the form
//
//	CALL <tool_name> <json-args>
//
// is one tool call, made in order: on each request the number of tool_result
// blocks already in the conversation says which CALL comes next. While one
// remains, the fake streams a tool_use block for it; after the last one (or
// when the prompt has none) it answers with a text block "done" and
// stop_reason end_turn, which ends a `claude -p` session.
//
// A line "SESSION <id>" in the prompt tags everything recorded for that
// conversation, so several claude processes can share one fake. Conversation
// state is derived purely from each request's messages; the only shared state
// is what the fake records.
//
// Every tool_result the CLI sends back is recorded once (ToolResults), with
// its is_error flag and its text as the model saw it.
//
// It can also fail as the real API does (faults.go): refuse connections,
// answer 5xx/529, 401, a subscriber's usage limit or an API key's rate
// limit (429), or "prompt is too long", for a window of requests or time or
// until Clear. Answering normally is the default.
//
// It understands every supported Claude Code version. Where they differ:
//   - the script may be spread over several user messages before the first
//     assistant turn (2.1.332 also sends the "deferred tools" list there, as
//     a user or system message); every CALL line of that opening is read;
//   - 2.1.332 offers ToolSearch instead of the MCP tools (a direct tool_use
//     of an MCP tool still runs), so a request counts as the scripted
//     conversation when it offers any tool at all;
//   - 2.1.332 appends a ToolSearch schema hint to the isError result of a
//     deferred tool: it is split off into ToolResult.SchemaHint, so Content
//     is the tool's own text on every version (ModelSaw joins them back);
//   - a hook's additionalContext arrives in the same user message as a
//     <system-reminder> block (2.1.197) or as a separate plain message
//     (2.1.332): both are recorded in ToolResult.Context as sent, and in
//     ToolResult.HookContext as the bare "<Event>:<tool> hook additional
//     context: <text>" lines, which are the same on every version.
package fakeapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// FinalText is the text the fake model answers with when no CALL remains.
const FinalText = "done"

// ToolResult is one tool_result block the model received.
type ToolResult struct {
	Session   string // the prompt's SESSION marker, "" if none
	ToolUseID string
	ToolName  string // name of the tool_use this answers ("" if unknown)
	Input     string // the JSON arguments the fake model sent with the tool_use
	// Content is the text of the result (text blocks joined with "\n")
	// without the CLI's ToolSearch schema hint (see SchemaHint).
	Content string
	// SchemaHint is what Claude Code 2.1.332 and later append to the isError
	// result of a deferred MCP tool ("\n\nThis tool's input schema was not in
	// your prompt when you called it. …"), exactly as sent; "" if none.
	SchemaHint string
	IsError    bool
	// Context holds the text the CLI sent after the tool_result and before
	// the next tool_result or assistant turn, joined with "\n", as sent: text
	// blocks in the same user message (2.1.197 puts a hook's
	// additionalContext there as a <system-reminder>) and plain messages
	// after it (2.1.332 sends additionalContext as its own message). "" if
	// none.
	Context string
	// HookContext lists the hooks' additionalContext lines found in Context,
	// unwrapped from any <system-reminder>: "PostToolUse:mcp__s__t hook
	// additional context: TEXT", the same text on every version.
	HookContext []string
}

// ModelSaw is the result text exactly as the model received it (Content
// with any schema hint appended).
func (r ToolResult) ModelSaw() string { return r.Content + r.SchemaHint }

// Request describes one request the fake received, for diagnostics.
type Request struct {
	Method, Path string
	Model        string
	Stream       bool
	Main         bool // judged part of a scripted conversation (it offers tools)
	Messages     int
	Tools        int
	ToolSearch   bool // the CLI offered ToolSearch (MCP tools deferred behind it)
	Session      string
	Answer       string // "tool_use <name>", "text", "count_tokens", "{}"
}

// Call is one scripted tool call parsed from a prompt.
type Call struct {
	Tool string
	Args string // JSON object text
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	t  testing.TB
	ln *listener // see faults.go: it can stop and resume listening on its port

	fmu     sync.Mutex
	fault   *activeFault // the failure being injected, nil = normal answers
	faulted int          // requests answered by faults so far
	closed  bool

	mu       sync.Mutex
	seq      int
	names    map[string]ToolResult // tool_use id -> name/input/session, as emitted
	results  []ToolResult
	seen     map[string]bool // tool_use ids whose result is recorded
	requests []Request
	unknown  []string
	// openings are the distinct opening texts (the prompt as the model
	// read it) of each session's conversations, in order.
	openings map[string][]string
	// watched are the strings Watch looks for in every request body, with
	// the number of requests that carried each.
	watched map[string]int
}

// Start starts a fake on 127.0.0.1:0; it is closed in t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, names: map[string]ToolResult{}, seen: map[string]bool{}}
	ln, err := newListener(http.HandlerFunc(s.serve))
	if err != nil {
		t.Fatalf("fakeapi: %v", err)
	}
	s.ln = ln
	t.Cleanup(s.Close)
	return s
}

// URL is the base URL to export as ANTHROPIC_BASE_URL. It stays the same
// while the fake refuses connections (see Fault.Refuse).
func (s *Server) URL() string { return "http://" + s.ln.addr }

// Close stops the server early (Start already arranges it for cleanup).
func (s *Server) Close() {
	s.fmu.Lock()
	s.closed = true
	s.stopFaultLocked()
	s.fmu.Unlock()
	s.ln.close()
}

// ToolResults returns every tool_result received so far, in arrival order.
func (s *Server) ToolResults() []ToolResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.results)
}

// SessionToolResults returns the tool results of the conversation whose
// prompt has the line "SESSION <session>".
func (s *Server) SessionToolResults(session string) []ToolResult {
	var out []ToolResult
	for _, r := range s.ToolResults() {
		if r.Session == session {
			out = append(out, r)
		}
	}
	return out
}

// Openings are the distinct opening texts the model read in session's
// conversations (the prompt, and what the CLI put before the first
// assistant turn), in the order first seen.
func (s *Server) Openings(session string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.openings[session])
}

// Requests returns the number of POST /v1/messages requests received (main
// conversation and side requests alike; not count_tokens).
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Path == "/v1/messages" && r.Method == http.MethodPost {
			n++
		}
	}
	return n
}

// Watch makes the fake look for each of words in the body of every
// request it receives from now on (any path, any method), raw and as
// JSON would escape it; Carried says how many requests held each.
func (s *Server) Watch(words ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watched == nil {
		s.watched = map[string]int{}
	}
	for _, w := range words {
		if _, ok := s.watched[w]; !ok {
			s.watched[w] = 0
		}
	}
}

// Carried is the number of requests whose body held word since Watch
// was called for it.
func (s *Server) Carried(word string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watched[word]
}

func (s *Server) look(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watched {
		esc, _ := json.Marshal(w)
		if bytes.Contains(body, []byte(w)) || bytes.Contains(body, esc[1:len(esc)-1]) {
			s.watched[w]++
		}
	}
}

// RequestLog returns a description of every request received.
func (s *Server) RequestLog() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Unknown returns a line for each request the fake did not expect (an
// unknown path, a body it could not parse); each was answered harmlessly.
func (s *Server) Unknown() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.unknown)
}

// ParseScript returns the SESSION marker and the CALL lines of a prompt.
func ParseScript(prompt string) (session string, calls []Call) {
	sc := bufio.NewScanner(strings.NewReader(prompt))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "SESSION":
			if session == "" {
				session = f[1]
			}
		case "CALL":
			rest := strings.TrimSpace(line[len("CALL"):])
			args := strings.TrimSpace(rest[len(f[1]):])
			if args == "" {
				args = "{}"
			}
			calls = append(calls, Call{Tool: f[1], Args: args})
		}
	}
	return session, calls
}

// ---- wire types ----

type apiRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Messages []apiMessage      `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
}

type apiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // string or []block
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // string or []block
	IsError   bool            `json:"is_error"`
}

// blocks decodes a content field that is either a string or a block list.
func blocks(raw json.RawMessage) []block {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(raw, &bs)
	return bs
}

// contentText joins the text of a tool_result content field; non-text blocks
// appear as "[<type>]".
func contentText(raw json.RawMessage) string {
	var parts []string
	for _, b := range blocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

// ---- handler ----

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.look(body)
	path := r.URL.Path
	if r.Method != http.MethodPost {
		s.note(Request{Method: r.Method, Path: path, Answer: "{}"}, "")
		writeJSON(w, map[string]any{})
		return
	}
	switch path {
	case "/v1/messages/count_tokens":
		s.note(Request{Method: r.Method, Path: path, Answer: "count_tokens"}, "")
		writeJSON(w, map[string]any{"input_tokens": max(1, len(body)/4)})
		return
	case "/v1/messages":
	default:
		s.note(Request{Method: r.Method, Path: path, Answer: "{}"},
			fmt.Sprintf("POST %s (%d bytes): %.200s", r.URL.RequestURI(), len(body), body))
		writeJSON(w, map[string]any{})
		return
	}

	var req apiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.note(Request{Method: r.Method, Path: path, Answer: "text"},
			fmt.Sprintf("POST %s: unparsable body (%v): %.200s", r.URL.RequestURI(), err, body))
		s.answerText(w, req, "ok", len(body))
		return
	}
	info := Request{Method: r.Method, Path: path, Model: req.Model, Stream: req.Stream,
		Messages: len(req.Messages), Tools: len(req.Tools), ToolSearch: offers(req.Tools, toolSearchName)}

	// Side requests (title or summary generation, quota checks, ...) offer no
	// tools; the scripted conversation always offers at least the MCP tools.
	if len(req.Tools) == 0 || len(req.Messages) == 0 {
		info.Answer = "text"
		s.note(info, "")
		s.answerText(w, req, "ok", len(body))
		return
	}
	info.Main = true

	prompt := openingText(req.Messages)
	session, calls := ParseScript(prompt)
	info.Session = session
	s.record(session, req.Messages)
	s.mu.Lock()
	if s.openings == nil {
		s.openings = map[string][]string{}
	}
	if !slices.Contains(s.openings[session], prompt) {
		s.openings[session] = append(s.openings[session], prompt)
	}
	s.mu.Unlock()

	n := 0 // tool_result blocks already in the conversation
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range blocks(m.Content) {
			if b.Type == "tool_result" {
				n++
			}
		}
	}
	if n >= len(calls) {
		info.Answer = "text"
		s.note(info, "")
		s.answerText(w, req, FinalText, len(body))
		return
	}
	c := calls[n]
	if !json.Valid([]byte(c.Args)) {
		s.t.Errorf("fakeapi: CALL %s: arguments are not valid JSON: %s", c.Tool, c.Args)
	}
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("toolu_%d", s.seq)
	s.names[id] = ToolResult{Session: session, ToolName: c.Tool, Input: c.Args}
	s.mu.Unlock()
	info.Answer = "tool_use " + c.Tool
	s.note(info, "")
	s.answerToolUse(w, req, id, c, len(body))
}

// toolSearchName is the tool 2.1.332 offers in place of deferred MCP tools.
const toolSearchName = "ToolSearch"

// offers reports whether the request's tools include one named name.
func offers(tools []json.RawMessage, name string) bool {
	for _, raw := range tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name == name {
			return true
		}
	}
	return false
}

// openingText is the text of every user message before the first assistant
// turn: the prompt, wherever the CLI put it among its reminders and lists.
func openingText(msgs []apiMessage) string {
	var parts []string
	for _, m := range msgs {
		if m.Role == "assistant" {
			break
		}
		if m.Role != "user" {
			continue
		}
		for _, b := range blocks(m.Content) {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// schemaHintMark starts the hint 2.1.332 appends to the isError result of a
// deferred MCP tool.
const schemaHintMark = "\n\nThis tool's input schema was not in your prompt when you called it."

// splitSchemaHint separates a result text from the CLI's schema hint.
func splitSchemaHint(content string) (own, hint string) {
	if i := strings.Index(content, schemaHintMark); i >= 0 {
		return content[:i], content[i:]
	}
	return content, ""
}

// hookContextMark is in every hook additionalContext line, on every version.
const hookContextMark = " hook additional context: "

// hookContext returns the hooks' additionalContext texts among the context
// pieces, each without its <system-reminder> wrapper.
func hookContext(pieces []string) []string {
	var out []string
	for _, p := range pieces {
		p = strings.TrimSpace(p)
		if inner, ok := strings.CutPrefix(p, "<system-reminder>"); ok {
			p = strings.TrimSpace(strings.TrimSuffix(inner, "</system-reminder>"))
		}
		if strings.Contains(p, hookContextMark) {
			out = append(out, p)
		}
	}
	return out
}

// record stores each tool_result of the conversation not recorded before,
// with the text the CLI sent after it (in the same message or in plain
// messages before the next tool_result or assistant turn).
func (s *Server) record(session string, msgs []apiMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Names and inputs as the conversation itself states them, in case a
	// tool_use was not emitted by this fake instance.
	fromHistory := map[string]block{}
	for _, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		for _, b := range blocks(m.Content) {
			if b.Type == "tool_use" {
				fromHistory[b.ID] = b
			}
		}
	}
	var fresh []ToolResult
	var ctx [][]string
	cur := -1 // index in fresh of the result that following text belongs to
	for _, m := range msgs {
		if m.Role == "assistant" {
			cur = -1
			continue
		}
		for _, b := range blocks(m.Content) {
			switch b.Type {
			case "tool_result":
				cur = -1
				if s.seen[b.ToolUseID] {
					continue
				}
				s.seen[b.ToolUseID] = true
				tr := ToolResult{Session: session, ToolUseID: b.ToolUseID, IsError: b.IsError}
				tr.Content = contentText(b.Content)
				if b.IsError {
					tr.Content, tr.SchemaHint = splitSchemaHint(tr.Content)
				}
				if e, ok := s.names[b.ToolUseID]; ok {
					tr.ToolName, tr.Input = e.ToolName, e.Input
				} else if h, ok := fromHistory[b.ToolUseID]; ok {
					tr.ToolName, tr.Input = h.Name, string(h.Input)
				}
				fresh = append(fresh, tr)
				ctx = append(ctx, nil)
				cur = len(fresh) - 1
			case "text":
				if cur >= 0 {
					ctx[cur] = append(ctx[cur], b.Text)
				}
			}
		}
	}
	for i, tr := range fresh {
		tr.Context = strings.Join(ctx[i], "\n")
		tr.HookContext = hookContext(ctx[i])
		s.results = append(s.results, tr)
	}
}

func (s *Server) note(r Request, unknown string) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	if unknown != "" {
		s.unknown = append(s.unknown, unknown)
	}
	s.mu.Unlock()
	if unknown != "" {
		s.t.Logf("fakeapi: unexpected request answered harmlessly: %s", unknown)
	}
}

// ---- answers ----

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) msgID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("msg_fake_%d", s.seq)
}

func usage(inTokens, outTokens int) map[string]any {
	return map[string]any{"input_tokens": inTokens, "output_tokens": outTokens,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

func model(req apiRequest) string {
	if req.Model != "" {
		return req.Model
	}
	return "claude-fake"
}

func (s *Server) answerText(w http.ResponseWriter, req apiRequest, text string, size int) {
	in := max(1, size/4)
	id := s.msgID()
	if !req.Stream {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model(req),
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "stop_sequence": nil, "usage": usage(in, 1)})
		return
	}
	sse(w, []event{
		{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model(req), "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": usage(in, 1)}}},
		{"content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}}},
		{"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": text}}},
		{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
		{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": 1}}},
		{"message_stop", map[string]any{"type": "message_stop"}},
	})
}

func (s *Server) answerToolUse(w http.ResponseWriter, req apiRequest, toolID string, c Call, size int) {
	in := max(1, size/4)
	id := s.msgID()
	if !req.Stream {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model(req),
			"content": []any{map[string]any{"type": "tool_use", "id": toolID, "name": c.Tool,
				"input": json.RawMessage(c.Args)}},
			"stop_reason": "tool_use", "stop_sequence": nil, "usage": usage(in, 1)})
		return
	}
	sse(w, []event{
		{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model(req), "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": usage(in, 1)}}},
		{"content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": toolID, "name": c.Tool, "input": map[string]any{}}}},
		{"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": c.Args}}},
		{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
		{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": 1}}},
		{"message_stop", map[string]any{"type": "message_stop"}},
	})
}

type event struct {
	name string
	data any
}

func sse(w http.ResponseWriter, evs []event) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for _, e := range evs {
		b, _ := json.Marshal(e.data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, b)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
