package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// Lines as the pinned Claude Code CLI (2.1.197) printed them in the
// session tests, trimmed of fields nightwatch does not read.
const (
	streamTestInit = `{"type":"system","subtype":"init","cwd":"/tmp/w","session_id":"395557d7-1c3d-43a9-b7cf-3639ac7407d2",` +
		`"tools":["Task","Bash","mcp__notes__echo"],"mcp_servers":[{"name":"notes","status":"connected"},` +
		`{"name":"broken","status":"failed"},{"name":"web","status":"needs-auth"},{"name":"slow","status":"pending"}],` +
		`"model":"claude-opus-4-8[1m]","permissionMode":"default","apiKeySource":"ANTHROPIC_API_KEY"}`
	streamTestAssistant = `{"type":"assistant","message":{"content":[{"id":"toolu_7","input":{"message":"x"},` +
		`"name":"mcp__broken__echo","type":"tool_use"}],"id":"msg_fake_8","role":"assistant","type":"message"},` +
		`"parent_tool_use_id":null,"session_id":"395557d7","tool_use_meta":[{"id":"toolu_7","display_name":"Echo"}]}`
	streamTestNoSuchTool = `{"type":"user","message":{"role":"user","content":[{"type":"tool_result",` +
		`"content":"<tool_use_error>Error: No such tool available: mcp__broken__echo</tool_use_error>","is_error":true,` +
		`"tool_use_id":"toolu_7"}]},"parent_tool_use_id":null,"session_id":"395557d7",` +
		`"timestamp":"2026-12-01T00:11:24.044Z","tool_use_result":"Error: No such tool available: mcp__broken__echo"}`
	streamTestSuccess = `{"type":"result","subtype":"success","is_error":false,"api_error_status":null,"duration_ms":200,` +
		`"duration_api_ms":71,"num_turns":2,"result":"done","stop_reason":"end_turn",` +
		`"session_id":"395557d7-1c3d-43a9-b7cf-3639ac7407d2","total_cost_usd":0.19165,"usage":{"input_tokens":38320},` +
		`"permission_denials":[],"terminal_reason":"completed"}`
)

func TestParseStreamLine(t *testing.T) {
	big := strings.Repeat("x", 5<<20)
	for _, tc := range []struct {
		name string
		line string
		want StreamLine
	}{
		{"init", streamTestInit, StreamLine{Init: true, SessionID: "395557d7-1c3d-43a9-b7cf-3639ac7407d2",
			Servers: []StreamServer{{"notes", "connected"}, {"broken", "failed"}, {"web", "needs-auth"}, {"slow", "pending"}}}},
		{"init without servers", `{"type":"system","subtype":"init","session_id":"s"}`,
			StreamLine{Init: true, SessionID: "s"}},
		{"assistant", streamTestAssistant, StreamLine{}},
		{"no such tool", streamTestNoSuchTool, StreamLine{ToolsUnavailable: []string{"mcp__broken__echo"}}},
		{"no such tool, block list and a hint", `{"type":"user","message":{"content":[{"type":"tool_result","content":` +
			`[{"type":"text","text":"<tool_use_error>Error: No such tool available: mcp__a-b__c_d. mcp__a-b__c_d is not available inside subagents.</tool_use_error>"}]},` +
			`{"type":"tool_result","content":"fine"}]}}`,
			StreamLine{ToolsUnavailable: []string{"mcp__a-b__c_d"}}},
		{"the words in a normal result", `{"type":"user","message":{"content":[{"type":"tool_result",` +
			`"content":"the docs say No such tool available means…"}]}}`, StreamLine{}},
		{"hook event", `{"type":"system","subtype":"hook_response","hook_event":"PreToolUse","exit_code":0,"outcome":"success"}`,
			StreamLine{}},
		{"success", streamTestSuccess, StreamLine{Result: &StreamResult{Subtype: "success", NumTurns: 2,
			TotalCostUSD: 0.19165, DurationMS: 200, SessionID: "395557d7-1c3d-43a9-b7cf-3639ac7407d2",
			TerminalReason: "completed", Result: "done"}}},
		{"max turns", `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,` +
			`"errors":["Reached maximum number of turns (2)"],"terminal_reason":"max_turns","total_cost_usd":0.5}`,
			StreamLine{Result: &StreamResult{Subtype: "error_max_turns", IsError: true, NumTurns: 3, TotalCostUSD: 0.5,
				Errors: []string{"Reached maximum number of turns (2)"}, TerminalReason: "max_turns"}}},
		{"api error", `{"type":"result","subtype":"success","is_error":true,"api_error_status":404,` +
			`"result":"API Error: 404 {\"type\":\"error\",\"error\":{\"type\":\"not_found_error\"}}","num_turns":1}`,
			StreamLine{Result: &StreamResult{Subtype: "success", IsError: true, APIErrorStatus: 404, NumTurns: 1,
				Result: `API Error: 404 {"type":"error","error":{"type":"not_found_error"}}`}}},
		{"a field of the wrong type keeps the rest", `{"type":"result","subtype":"success","num_turns":"three","total_cost_usd":1.5}`,
			StreamLine{Result: &StreamResult{Subtype: "success", TotalCostUSD: 1.5}}},
		{"garbage", `hello from server`, StreamLine{}},
		{"broken json", `{"type":"result","subtype":"succ`, StreamLine{}},
		{"json that is not an object", `["type","result"]`, StreamLine{}},
		{"empty", ``, StreamLine{}},
		{"5 MiB result", `{"type":"result","subtype":"success","num_turns":9,"result":"` + big + `"}`,
			StreamLine{Result: &StreamResult{Subtype: "success", NumTurns: 9, Result: big}}},
		{"5 MiB tool result", `{"type":"user","message":{"content":[{"type":"tool_result","content":"` + big +
			` No such tool available: mcp__x__y"}]}}`, StreamLine{ToolsUnavailable: []string{"mcp__x__y"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseStreamLine([]byte(tc.line))
			if !streamTestEqual(got, tc.want) {
				t.Errorf("got %s\nwant %s", streamTestShow(got), streamTestShow(tc.want))
			}
		})
	}
}

func streamTestEqual(a, b StreamLine) bool {
	if a.Init != b.Init || a.SessionID != b.SessionID || !slices.Equal(a.Servers, b.Servers) ||
		!slices.Equal(a.ToolsUnavailable, b.ToolsUnavailable) || (a.Result == nil) != (b.Result == nil) {
		return false
	}
	if a.Result == nil {
		return true
	}
	ra, rb := *a.Result, *b.Result
	return slices.Equal(ra.Errors, rb.Errors) && ra.Subtype == rb.Subtype && ra.IsError == rb.IsError &&
		ra.APIErrorStatus == rb.APIErrorStatus && ra.NumTurns == rb.NumTurns && ra.TotalCostUSD == rb.TotalCostUSD &&
		ra.DurationMS == rb.DurationMS && ra.SessionID == rb.SessionID && ra.TerminalReason == rb.TerminalReason &&
		ra.Result == rb.Result
}

func streamTestShow(l StreamLine) string {
	r := "<nil>"
	if l.Result != nil {
		c := *l.Result
		if len(c.Result) > 40 {
			c.Result = c.Result[:40] + "…"
		}
		r = fmt.Sprintf("%+v", c)
	}
	return fmt.Sprintf("init=%v session=%q servers=%v tools=%q result=%s", l.Init, l.SessionID, l.Servers, l.ToolsUnavailable, r)
}

// streamTestCollect reads data the way RunSession does and returns the
// lines fn saw and what was copied.
func streamTestCollect(t testing.TB, r io.Reader, bufSize, maxLine int) (lines []string, raw string) {
	var copied bytes.Buffer
	err := readStreamLines(r, &copied, func(line []byte) { lines = append(lines, string(line)) }, bufSize, maxLine)
	if err != nil {
		t.Fatalf("readStreamLines: %v", err)
	}
	return lines, copied.String()
}

func TestReadStreamLines(t *testing.T) {
	// A 5 MiB line in large reads, and (smaller, to stay quick under
	// -race) a line spanning many buffers one byte at a time.
	for _, tc := range []struct {
		name string
		big  int
		read func(io.Reader) io.Reader
	}{
		{"whole", 5 << 20, func(r io.Reader) io.Reader { return r }},
		{"one byte", 200 << 10, iotest.OneByteReader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			big := `{"type":"result","subtype":"success","result":"` + strings.Repeat("y", tc.big) + `"}`
			input := streamTestInit + "\n" + "not json\n" + big + "\n\n" + streamTestNoSuchTool + "\n" +
				streamTestSuccess // no final newline, as a crash could leave it
			lines, raw := streamTestCollect(t, tc.read(strings.NewReader(input)), 64<<10, maxParsedLine)
			if raw != input {
				t.Errorf("the copy differs from the stream (%d bytes, want %d)", len(raw), len(input))
			}
			want := []string{streamTestInit, "not json", big, "", streamTestNoSuchTool, streamTestSuccess}
			if !slices.Equal(lines, want) {
				t.Errorf("got %d lines, want %d", len(lines), len(want))
			}
			var results []*StreamResult
			for _, l := range lines {
				if p := ParseStreamLine([]byte(l)); p.Result != nil {
					results = append(results, p.Result)
				}
			}
			if len(results) != 2 || len(results[0].Result) != tc.big || results[1].NumTurns != 2 {
				t.Errorf("results = %d", len(results))
			}
		})
	}

	t.Run("a line over the bound is copied, not parsed", func(t *testing.T) {
		input := "short\n" + strings.Repeat("z", 100) + "\nafter\n"
		lines, raw := streamTestCollect(t, strings.NewReader(input), 16, 50)
		if raw != input || !slices.Equal(lines, []string{"short", "after"}) {
			t.Errorf("lines %q, copy ok %v", lines, raw == input)
		}
	})

	t.Run("a failed copy keeps reading", func(t *testing.T) {
		var lines []string
		err := ReadStreamLines(strings.NewReader("a\nb\nc\n"), streamTestFailingWriter{},
			func(l []byte) { lines = append(lines, string(l)) })
		if err == nil || !strings.Contains(err.Error(), "disk full") || !slices.Equal(lines, []string{"a", "b", "c"}) {
			t.Errorf("err %v, lines %q", err, lines)
		}
	})
}

type streamTestFailingWriter struct{}

func (streamTestFailingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// FuzzStreamLine: no line may panic the parser, and the reader must hand
// out exactly the stream's lines and copy exactly its bytes, with a tiny
// buffer so that long-line joining and skipping are exercised.
func FuzzStreamLine(f *testing.F) {
	for _, seed := range []string{streamTestInit, streamTestAssistant, streamTestNoSuchTool, streamTestSuccess,
		"", "\n", "garbage\n{", `{"type":"result","num_turns":1e400}`, `{"type":"user","message":{"content":"No such tool available: x"}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"text","text":"No such tool available: "}]}]}}`,
		`{"type":"system","subtype":"init","mcp_servers":[null,{"name":1}]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := ParseStreamLine(data)
		for _, tool := range l.ToolsUnavailable {
			if tool == "" {
				t.Errorf("an empty tool name from %q", data)
			}
		}

		const maxLine = 40
		lines, raw := streamTestCollect(t, bytes.NewReader(data), 16, maxLine)
		if raw != string(data) {
			t.Fatalf("copy %q, want %q", raw, data)
		}
		var want []string
		if len(data) > 0 {
			parts := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			for _, p := range parts {
				if len(p) <= maxLine {
					want = append(want, p)
				}
			}
		}
		if !slices.Equal(lines, want) {
			t.Fatalf("lines %q, want %q", lines, want)
		}
	})
}
