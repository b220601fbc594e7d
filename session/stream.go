package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// Claude Code's `--output-format stream-json --verbose` prints one JSON
// event per line (reference §2.3). nightwatch reads these while the
// session runs: the system/init event (which MCP servers connected, and on
// 2.1.332 where each was configured), the assistant's tool_use blocks and
// the user's tool_result blocks of MCP tools (the attempt's ledger of
// calls: a call to a server that failed to connect fires no hook, so the
// stream is the only witness), 2.1.332's tool_result_meta and
// system/permission_denied event, and the final result event (with its
// permission_denials).
//
// The CLI's own texts are read only from a tool_result marked is_error,
// and only as the whole text (healthcheck.ClientText): a successful result
// or a server's own error text that quotes them is the server's answer,
// and whoever can put a sentence in front of the model must not be able
// to fail or stop a job with it.

// maxParsedLine bounds the lines that are decoded. A longer line is still
// copied to stream.jsonl in full; it is only not interpreted. Tool results
// and final texts of several MiB are normal, so the bound is generous.
const maxParsedLine = 64 << 20

// maxErrorText bounds the text of a failed call kept in the ledger.
const maxErrorText = 300

// Server is one entry of the init event's mcp_servers list.
type Server struct {
	Name   string       `json:"name"`
	Status ServerStatus `json:"status"`
	// Source is where Claude Code found the server (2.1.332): dynamic
	// (--mcp-config), project, user, local, …; "" on older versions.
	Source string `json:"source,omitempty"`
}

// Denial is one entry of the result event's permission_denials: a tool
// call the session was not allowed to make (a permission rule, a hook's
// deny or ask).
type Denial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
}

// PermissionDenied is 2.1.332's system/permission_denied event, written as
// the denial happens (for permission rules and a hook's ask, not for a
// hook's deny: those are only in the result's permission_denials).
type PermissionDenied struct {
	ToolName           string `json:"tool_name"`
	ToolUseID          string `json:"tool_use_id,omitempty"`
	Message            string `json:"message,omitempty"`
	DecisionReasonType string `json:"decision_reason_type,omitempty"`
	DecisionReason     string `json:"decision_reason,omitempty"`
}

// ResultEvent is the fields of the result event nightwatch keeps.
type ResultEvent struct {
	Subtype        string   `json:"subtype"`
	IsError        bool     `json:"is_error"`
	APIErrorStatus int      `json:"api_error_status"`
	NumTurns       int      `json:"num_turns"`
	TotalCostUSD   float64  `json:"total_cost_usd"`
	DurationMS     int64    `json:"duration_ms"`
	SessionID      string   `json:"session_id"`
	TerminalReason string   `json:"terminal_reason"`
	Result         string   `json:"result"`
	Errors         []string `json:"errors"`
	// PermissionDenials are the calls the session was refused.
	PermissionDenials []Denial `json:"permission_denials"`
}

// ToolUse is an assistant's call of an MCP tool.
type ToolUse struct {
	ID   string
	Name string
}

// ToolResult is the answer a call got, as the model saw it.
type ToolResult struct {
	ID      string
	IsError bool
	// Text is the failed call's text, on one line, bounded ("" for a
	// call that did not fail).
	Text string
	// Client is what the CLI's own text says, when a failed call's whole
	// text is one of them; nil otherwise.
	Client *healthcheck.ClientFailure
}

// ResultMeta is one entry of 2.1.332's tool_result_meta on a user event:
// who decided whether the call ran.
type ResultMeta struct {
	ID                 string `json:"id"`
	PermissionDecision struct {
		Decision   string `json:"decision"` // accept, reject
		Source     string `json:"source"`   // config, hook
		ReasonType string `json:"reason_type"`
	} `json:"permission_decision"`
	NonExecutionKind string `json:"non_execution_kind,omitempty"`
}

// Line is what one line of the stream says. A line of another kind
// (assistant text, hook events, garbage) yields the zero value.
type Line struct {
	Init             bool              // a system/init event
	SessionID        string            // from init
	Servers          []Server          // from init
	ToolUses         []ToolUse         // an assistant event's calls of MCP tools
	ToolResults      []ToolResult      // a user event's answers
	ResultMeta       []ResultMeta      // a user event's tool_result_meta (2.1.332)
	PermissionDenied *PermissionDenied // a system/permission_denied event
	Result           *ResultEvent      // the result event
	// ModelTurn: an assistant event the model's API answered (not the
	// CLI's own "API Error" message, whose model is "<synthetic>" and
	// which carries an error field): the API serves real requests.
	ModelTurn bool
	// Turn is the message id of the session's own assistant event (not a
	// subagent's): the lines of one model turn share it.
	Turn string
}

// ToolsUnavailable are the tools the CLI said do not exist in the
// session ("No such tool available", with or without a word of their
// server).
func (l Line) ToolsUnavailable() []string {
	var out []string
	for _, r := range l.ToolResults {
		if c := r.Client; c != nil && c.Tool != "" && (c.Kind == healthcheck.ClientNoSuchTool || c.Kind == healthcheck.ClientDisconnected ||
			c.Kind == healthcheck.ClientNotRetried || c.Kind == healthcheck.ClientConnecting) {
			out = append(out, c.Tool)
		}
	}
	return out
}

// streamEvent is the union of the event shapes read here. Only the fields
// needed are declared, so the rest of a large event is skipped unparsed.
type streamEvent struct {
	Type           string          `json:"type"`
	Subtype        string          `json:"subtype"`
	SessionID      string          `json:"session_id"`
	MCPServers     []Server        `json:"mcp_servers"`
	Message        json.RawMessage `json:"message"`
	Error          json.RawMessage `json:"error"`
	ToolResultMeta json.RawMessage `json:"tool_result_meta"`
	// ParentToolUseID is set on a subagent's events.
	ParentToolUseID *string `json:"parent_tool_use_id"`
}

// ParseLine interprets one line of stream-json. It never fails:
// anything that is not a recognisable event is reported as an empty
// Line, because a stray line from a wrapper script must not stop the
// supervisor from reading the rest of the stream.
func ParseLine(line []byte) Line {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' || len(line) > maxParsedLine {
		return Line{}
	}
	var ev streamEvent
	if !decodeLenient(line, &ev) {
		return Line{}
	}
	switch {
	case ev.Type == "system" && ev.Subtype == "init":
		return Line{Init: true, SessionID: ev.SessionID, Servers: ev.MCPServers}
	case ev.Type == "system" && ev.Subtype == "permission_denied":
		var d PermissionDenied
		if !decodeLenient(line, &d) {
			return Line{}
		}
		return Line{PermissionDenied: &d}
	case ev.Type == "result":
		var r ResultEvent
		if !decodeLenient(line, &r) {
			return Line{}
		}
		return Line{Result: &r}
	case ev.Type == "assistant":
		l := Line{ModelTurn: modelTurn(ev)}
		if ev.ParentToolUseID == nil || *ev.ParentToolUseID == "" {
			l.Turn = messageID(ev.Message)
		}
		if bytes.Contains(line, []byte(`"tool_use"`)) {
			l.ToolUses = toolUses(ev.Message)
		}
		return l
	case ev.Type == "user" && (bytes.Contains(line, []byte(`"tool_result"`)) || len(ev.ToolResultMeta) > 0):
		var meta []ResultMeta
		if len(ev.ToolResultMeta) > 0 {
			decodeLenient(ev.ToolResultMeta, &meta)
		}
		return Line{ToolResults: toolResults(ev.Message), ResultMeta: meta}
	}
	return Line{}
}

// syntheticModel is the model the CLI names in an assistant message it
// wrote itself (an API error shown as the model's answer).
const syntheticModel = "<synthetic>"

// modelTurn says whether an assistant event is the API's answer.
func modelTurn(ev streamEvent) bool {
	if len(ev.Error) > 0 && string(ev.Error) != "null" {
		return false
	}
	var msg struct {
		Model string `json:"model"`
		ID    string `json:"id"`
	}
	if !decodeLenient(ev.Message, &msg) {
		return false
	}
	return msg.ID != "" && msg.Model != "" && msg.Model != syntheticModel
}

// messageID is an assistant message's id; "" when it has none.
func messageID(message json.RawMessage) string {
	var msg struct {
		ID string `json:"id"`
	}
	if !decodeLenient(message, &msg) {
		return ""
	}
	return msg.ID
}

// toolUses returns the calls of MCP tools in an assistant message.
func toolUses(message json.RawMessage) []ToolUse {
	var msg struct {
		Content []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"content"`
	}
	if !decodeLenient(message, &msg) {
		return nil
	}
	var out []ToolUse
	for _, b := range msg.Content {
		if b.Type == "tool_use" && b.ID != "" && jobs.ToolServer(b.Name) != "" {
			out = append(out, ToolUse{ID: b.ID, Name: b.Name})
		}
	}
	return out
}

// toolResults returns the tool_result blocks of a user message. Only a
// block marked is_error is read for the CLI's texts.
func toolResults(message json.RawMessage) []ToolResult {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if !decodeLenient(message, &msg) {
		return nil
	}
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	}
	if !decodeLenient(msg.Content, &blocks) {
		return nil
	}
	var out []ToolResult
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		r := ToolResult{ID: b.ToolUseID, IsError: b.IsError}
		if b.IsError {
			whole := strings.Join(blockTexts(b.Content), "\n")
			if c, ok := healthcheck.ClientText(whole); ok {
				r.Client = &c
				whole = c.Text
			}
			r.Text = text.OneLine(whole, maxErrorText)
		}
		out = append(out, r)
	}
	return out
}

// decodeLenient decodes data into v and reports whether it was a JSON
// object. A field of an unexpected type (num_turns as a string, say) is
// left at its zero value instead of throwing away the whole event:
// encoding/json fills every other field before it reports the type error.
func decodeLenient(data []byte, v any) bool {
	err := json.Unmarshal(data, v)
	var typeErr *json.UnmarshalTypeError
	return err == nil || errors.As(err, &typeErr)
}

// blockTexts returns the text of a tool_result's content, which is either
// a string or a list of content blocks.
func blockTexts(content json.RawMessage) []string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if !decodeLenient(content, &parts) {
		return nil
	}
	var out []string
	for _, p := range parts {
		if p.Type == "text" {
			out = append(out, p.Text)
		}
	}
	return out
}

// ReadLines reads r to its end, copying every byte to raw (if not
// nil) as it arrives and calling fn with each line, without its newline
// (the last line may lack one). fn must not keep the slice.
//
// Lines of any length are copied to raw; a line longer than maxParsedLine
// is not passed to fn, so one huge line costs at most that much memory.
// A failed write to raw stops the copy but not the reading: the child
// must never block on a full pipe because the log disk filled up. That
// first write error is returned at the end.
func ReadLines(r io.Reader, raw io.Writer, fn func(line []byte)) error {
	return readLines(r, raw, fn, 64<<10, maxParsedLine)
}

// readLines is ReadLines with the buffer size and the line
// bound as parameters, so tests can reach the long-line paths cheaply.
func readLines(r io.Reader, raw io.Writer, fn func(line []byte), bufSize, maxLine int) error {
	br := bufio.NewReaderSize(r, bufSize)
	var (
		long     []byte // the start of a line longer than the buffer
		oversize bool   // the current line is longer than maxLine: skip it
		writeErr error
	)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 && raw != nil && writeErr == nil {
			if _, werr := raw.Write(chunk); werr != nil {
				writeErr = fmt.Errorf("copy the stream: %w", werr)
			}
		}
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return errors.Join(fmt.Errorf("read the stream: %w", err), writeErr)
		}
		// ReadSlice's buffer is reused by the next call, so the pieces of
		// a long line are kept in long. maxLine+1 leaves room for the
		// newline.
		line := chunk
		if len(long) > 0 || errors.Is(err, bufio.ErrBufferFull) {
			if !oversize && len(long)+len(chunk) <= maxLine+1 {
				long = append(long, chunk...)
				line = long
			} else {
				oversize, long = true, long[:0]
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		if !oversize && len(line) <= maxLine && (len(line) > 0 || len(chunk) > 0) {
			fn(line)
		}
		oversize, long = false, long[:0]
		if cap(long) > 1<<20 {
			long = nil // do not pin a huge buffer for the rest of the session
		}
		if err != nil { // io.EOF
			return writeErr
		}
	}
}
