package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Claude Code's `--output-format stream-json --verbose` prints one JSON
// event per line (reference §2.3). nightwatch reads four of them while the
// session runs: the system/init event (which MCP servers connected, and on
// 2.1.332 where each was configured), user events whose tool_result says a
// tool does not exist (a call to a server that failed to connect fires no
// hook, so the stream is the only witness), 2.1.332's
// system/permission_denied event, and the final result event (with its
// permission_denials).

// maxParsedLine bounds the lines that are decoded. A longer line is still
// copied to stream.jsonl in full; it is only not interpreted. Tool results
// and final texts of several MiB are normal, so the bound is generous.
const maxParsedLine = 64 << 20

// noSuchTool is the CLI's text for a call to a tool the session does not
// have: `<tool_use_error>Error: No such tool available: mcp__x__y</tool_use_error>`.
const noSuchTool = "No such tool available"

// notGranted is the CLI's text for a call a permission rule refused under
// -p: "Claude requested permissions to use mcp__x__y, but you haven't
// granted it yet." (both versions). A hook's deny reads otherwise, so this
// tells a permission denial from a call nightwatch's hook blocked, which
// both land in the result's permission_denials.
const notGranted = "requested permissions to use"

// notConnectedRe finds the server a tool result says is not connected
// ("MCP server \"x\" is not connected", "Server 'x' is not connected").
var notConnectedRe = regexp.MustCompile(`(?i)server ["'` + "`" + `]?([A-Za-z0-9_.-]+)["'` + "`" + `]? is not connected`)

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

// Line is what one line of the stream says. At most one of its
// parts is set; a line of another kind (assistant text, hook events,
// garbage) yields the zero value.
type Line struct {
	Init             bool              // a system/init event
	SessionID        string            // from init
	Servers          []Server          // from init
	ToolsUnavailable []string          // tools a user event's tool_result says do not exist
	ToolsNotGranted  []string          // tools a user event's tool_result says a permission rule refused
	NotConnected     []string          // servers a user event's tool_result says are not connected
	PermissionDenied *PermissionDenied // a system/permission_denied event
	Result           *ResultEvent      // the result event
}

// streamEvent is the union of the event shapes read here. Only the fields
// needed are declared, so the rest of a large event is skipped unparsed.
type streamEvent struct {
	Type       string          `json:"type"`
	Subtype    string          `json:"subtype"`
	SessionID  string          `json:"session_id"`
	MCPServers []Server        `json:"mcp_servers"`
	Message    json.RawMessage `json:"message"`
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
	case ev.Type == "user" && (bytes.Contains(line, []byte(noSuchTool)) || bytes.Contains(line, []byte(notGranted)) ||
		bytes.Contains(line, []byte("is not connected"))):
		// The cheap Contains check above keeps the common case (large tool
		// results that are fine) from being decoded twice.
		var l Line
		for _, text := range resultTexts(ev.Message) {
			if name, ok := nameAfter(text, noSuchTool+":"); ok {
				l.ToolsUnavailable = append(l.ToolsUnavailable, name)
			}
			if name, ok := nameAfter(text, notGranted); ok {
				l.ToolsNotGranted = append(l.ToolsNotGranted, name)
			}
			if m := notConnectedRe.FindStringSubmatch(text); m != nil {
				l.NotConnected = append(l.NotConnected, m[1])
			}
		}
		return l
	}
	return Line{}
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

// resultTexts returns the texts of the tool_result blocks in a user
// message.
func resultTexts(message json.RawMessage) []string {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if !decodeLenient(message, &msg) {
		return nil
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if !decodeLenient(msg.Content, &blocks) {
		return nil
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "tool_result" {
			texts = append(texts, blockTexts(b.Content)...)
		}
	}
	return texts
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

// nameAfter finds marker ("No such tool available:") in text and returns
// the tool name after it. Claude Code's tool names (mcp__server__tool included)
// use only letters, digits, '_' and '-'; the CLI may follow the name with
// a hint sentence (". X is not available inside subagents…") or the
// closing </tool_use_error>, which this cuts off.
func nameAfter(text, marker string) (string, bool) {
	_, rest, ok := strings.Cut(text, marker)
	if !ok {
		return "", false
	}
	rest = strings.TrimLeft(rest, " ")
	end := strings.IndexFunc(rest, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	if end < 0 {
		end = len(rest)
	}
	if end == 0 {
		return "", false
	}
	return rest[:end], true
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
