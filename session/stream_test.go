package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/jobs"
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
		want Line
	}{
		{"init", streamTestInit, Line{Init: true, SessionID: "395557d7-1c3d-43a9-b7cf-3639ac7407d2",
			Servers: []Server{{"notes", "connected", ""}, {"broken", "failed", ""}, {"web", "needs-auth", ""}, {"slow", "pending", ""}}}},
		{"init without servers", `{"type":"system","subtype":"init","session_id":"s"}`,
			Line{Init: true, SessionID: "s"}},
		{"assistant", streamTestAssistant, Line{ToolUses: []ToolUse{{"toolu_7", "mcp__broken__echo"}}}},
		{"the model's answer", `{"type":"assistant","message":{"id":"msg_01","model":"claude-opus-5-5","role":"assistant",` +
			`"content":[{"type":"text","text":"done"}]}}`, Line{ModelTurn: true}},
		{"the CLI's API error as an answer", `{"type":"assistant","message":{"id":"0e9c","model":"<synthetic>","role":"assistant",` +
			`"content":[{"type":"text","text":"API Error: 529 Overloaded"}]},"error":"server_error"}`, Line{}},
		{"an answer with an error field", `{"type":"assistant","message":{"id":"msg_01","model":"claude-opus-5-5",` +
			`"content":[{"type":"text","text":"API Error: 529"}]},"error":"overloaded"}`, Line{}},
		{"no such tool", streamTestNoSuchTool, streamTestUnavailable("mcp__broken__echo")},
		{"no such tool, block list and a hint", `{"type":"user","message":{"content":[{"type":"tool_result","is_error":true,"content":` +
			`[{"type":"text","text":"<tool_use_error>Error: No such tool available: mcp__a-b__c_d. mcp__a-b__c_d is not available inside subagents.</tool_use_error>"}]},` +
			`{"type":"tool_result","content":"fine"}]}}`,
			streamTestUnavailable("mcp__a-b__c_d")},
		{"the words in a normal result", `{"type":"user","message":{"content":[{"type":"tool_result",` +
			`"content":"the docs say No such tool available means…"}]}}`, Line{}},
		{"the whole text in a successful result", `{"type":"user","message":{"content":[{"type":"tool_result",` +
			`"content":"<tool_use_error>Error: No such tool available: mcp__x__y</tool_use_error>"}]}}`, Line{}},
		{"hook event", `{"type":"system","subtype":"hook_response","hook_event":"PreToolUse","exit_code":0,"outcome":"success"}`,
			Line{}},
		{"success", streamTestSuccess, Line{Result: &ResultEvent{Subtype: "success", NumTurns: 2,
			TotalCostUSD: 0.19165, DurationMS: 200, SessionID: "395557d7-1c3d-43a9-b7cf-3639ac7407d2",
			TerminalReason: "completed", Result: "done"}}},
		{"max turns", `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,` +
			`"errors":["Reached maximum number of turns (2)"],"terminal_reason":"max_turns","total_cost_usd":0.5}`,
			Line{Result: &ResultEvent{Subtype: "error_max_turns", IsError: true, NumTurns: 3, TotalCostUSD: 0.5,
				Errors: []string{"Reached maximum number of turns (2)"}, TerminalReason: "max_turns"}}},
		{"api error", `{"type":"result","subtype":"success","is_error":true,"api_error_status":404,` +
			`"result":"API Error: 404 {\"type\":\"error\",\"error\":{\"type\":\"not_found_error\"}}","num_turns":1}`,
			Line{Result: &ResultEvent{Subtype: "success", IsError: true, APIErrorStatus: 404, NumTurns: 1,
				Result: `API Error: 404 {"type":"error","error":{"type":"not_found_error"}}`}}},
		{"a field of the wrong type keeps the rest", `{"type":"result","subtype":"success","num_turns":"three","total_cost_usd":1.5}`,
			Line{Result: &ResultEvent{Subtype: "success", TotalCostUSD: 1.5}}},
		{"garbage", `hello from server`, Line{}},
		{"broken json", `{"type":"result","subtype":"succ`, Line{}},
		{"json that is not an object", `["type","result"]`, Line{}},
		{"empty", ``, Line{}},
		{"5 MiB result", `{"type":"result","subtype":"success","num_turns":9,"result":"` + big + `"}`,
			Line{Result: &ResultEvent{Subtype: "success", NumTurns: 9, Result: big}}},
		{"5 MiB failed tool result quoting the text", `{"type":"user","message":{"content":[{"type":"tool_result","is_error":true,"content":"` + big +
			` No such tool available: mcp__x__y"}]}}`, Line{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseLine([]byte(tc.line))
			if !streamTestEqual(got, tc.want) {
				t.Errorf("got %s\nwant %s", streamTestShow(got), streamTestShow(tc.want))
			}
		})
	}
}

// streamTestUnavailable is a Line whose failed calls say the tools do
// not exist.
func streamTestUnavailable(tools ...string) Line {
	var l Line
	for _, tool := range tools {
		l.ToolResults = append(l.ToolResults, ToolResult{IsError: true,
			Client: &healthcheck.ClientFailure{Kind: healthcheck.ClientNoSuchTool, Tool: tool}})
	}
	return l
}

func streamTestEqual(a, b Line) bool {
	if a.Init != b.Init || a.SessionID != b.SessionID || !slices.Equal(a.Servers, b.Servers) ||
		!slices.Equal(a.ToolsUnavailable(), b.ToolsUnavailable()) || !slices.Equal(a.ToolUses, b.ToolUses) || (a.Result == nil) != (b.Result == nil) ||
		!reflect.DeepEqual(a.PermissionDenied, b.PermissionDenied) {
		return false
	}
	if a.Result == nil {
		return true
	}
	ra, rb := *a.Result, *b.Result
	return slices.Equal(ra.Errors, rb.Errors) && ra.Subtype == rb.Subtype && ra.IsError == rb.IsError &&
		ra.APIErrorStatus == rb.APIErrorStatus && ra.NumTurns == rb.NumTurns && ra.TotalCostUSD == rb.TotalCostUSD &&
		ra.DurationMS == rb.DurationMS && ra.SessionID == rb.SessionID && ra.TerminalReason == rb.TerminalReason &&
		ra.Result == rb.Result && denialsEqual(ra.PermissionDenials, rb.PermissionDenials)
}

func denialsEqual(a, b []Denial) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ToolName != b[i].ToolName || a[i].ToolUseID != b[i].ToolUseID || string(a[i].ToolInput) != string(b[i].ToolInput) {
			return false
		}
	}
	return true
}

// The 2.1.332 lines of the reference (claude-code-2.1.332.md §2b, §5a,
// §5b, §5c), as the CLI prints them.
const (
	streamTest332Init = `{"type":"system","subtype":"init","session_id":"s332","mcp_servers":[` +
		`{"name":"good","status":"connected","source":"dynamic"},{"name":"bad","status":"failed","source":"dynamic"},` +
		`{"name":"proj","status":"connected","source":"project"}]}`
	streamTest332Denials = `{"type":"result","subtype":"success","is_error":false,"num_turns":2,"terminal_reason":"completed",` +
		`"permission_denials":[{"tool_name":"mcp__notes__echo","tool_use_id":"toolu_01","tool_input":{"message":"hello"}}]}`
	streamTest332Denied = `{"type":"system","subtype":"permission_denied","tool_name":"mcp__notes__echo","tool_use_id":"toolu_01",` +
		`"message":"Claude requested permissions to use mcp__notes__echo, but you haven't granted it yet."}`
	streamTest332DeniedAsk = `{"type":"system","subtype":"permission_denied","tool_name":"mcp__notes__echo","tool_use_id":"toolu_02",` +
		`"message":"Hook asked","decision_reason_type":"hook","decision_reason":"needs a human"}`
)

func TestParseStreamLine2_1_332(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want Line
	}{
		{"init with sources", streamTest332Init, Line{Init: true, SessionID: "s332", Servers: []Server{
			{"good", "connected", "dynamic"}, {"bad", "failed", "dynamic"}, {"proj", "connected", "project"}}}},
		{"result with permission denials", streamTest332Denials, Line{Result: &ResultEvent{Subtype: "success", NumTurns: 2,
			TerminalReason: "completed", PermissionDenials: []Denial{{ToolName: "mcp__notes__echo", ToolUseID: "toolu_01",
				ToolInput: []byte(`{"message":"hello"}`)}}}}},
		{"permission_denied event", streamTest332Denied, Line{PermissionDenied: &PermissionDenied{ToolName: "mcp__notes__echo",
			ToolUseID: "toolu_01", Message: "Claude requested permissions to use mcp__notes__echo, but you haven't granted it yet."}}},
		{"permission_denied for a hook's ask", streamTest332DeniedAsk, Line{PermissionDenied: &PermissionDenied{ToolName: "mcp__notes__echo",
			ToolUseID: "toolu_02", Message: "Hook asked", DecisionReasonType: "hook", DecisionReason: "needs a human"}}},
		{"empty denials", streamTestSuccess, Line{Result: &ResultEvent{Subtype: "success", NumTurns: 2,
			TotalCostUSD: 0.19165, DurationMS: 200, SessionID: "395557d7-1c3d-43a9-b7cf-3639ac7407d2",
			TerminalReason: "completed", Result: "done"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseLine([]byte(tc.line)); !streamTestEqual(got, tc.want) {
				t.Errorf("got %s denied=%+v\nwant %s denied=%+v", streamTestShow(got), got.PermissionDenied, streamTestShow(tc.want), tc.want.PermissionDenied)
			}
		})
	}
}

// The stream's 2.1.332 facts reach the Outcome as typed fields.
func TestStreamStateFillsOutcome(t *testing.T) {
	st := &streamState{obs: ObserverFunc(func(Observation) {})}
	for _, l := range []string{streamTest332Init, streamTest332Denied, streamTest332DeniedAsk, streamTest332Denials} {
		st.line([]byte(l))
	}
	var out Outcome
	st.fill(&out)
	if len(out.Servers) != 3 || out.Servers[2].Source != "project" {
		t.Errorf("Servers = %+v", out.Servers)
	}
	if !slices.Equal(out.ServersFailed, []string{"bad"}) {
		t.Errorf("ServersFailed = %v", out.ServersFailed)
	}
	if len(out.PermissionDenials) != 1 || out.PermissionDenials[0].ToolName != "mcp__notes__echo" {
		t.Errorf("PermissionDenials = %+v", out.PermissionDenials)
	}
	if len(out.PermissionDenied) != 2 || out.PermissionDenied[1].DecisionReasonType != "hook" {
		t.Errorf("PermissionDenied = %+v", out.PermissionDenied)
	}
}

func streamTestShow(l Line) string {
	r := "<nil>"
	if l.Result != nil {
		c := *l.Result
		if len(c.Result) > 40 {
			c.Result = c.Result[:40] + "…"
		}
		r = fmt.Sprintf("%+v", c)
	}
	return fmt.Sprintf("init=%v session=%q servers=%v tools=%q uses=%v result=%s", l.Init, l.SessionID, l.Servers, l.ToolsUnavailable(), l.ToolUses, r)
}

// streamTestCollect reads data the way Run does and returns the
// lines fn saw and what was copied.
func streamTestCollect(t testing.TB, r io.Reader, bufSize, maxLine int) (lines []string, raw string) {
	var copied bytes.Buffer
	err := readLines(r, &copied, func(line []byte) { lines = append(lines, string(line)) }, bufSize, maxLine)
	if err != nil {
		t.Fatalf("readLines: %v", err)
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
			var results []*ResultEvent
			for _, l := range lines {
				if p := ParseLine([]byte(l)); p.Result != nil {
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
		err := ReadLines(strings.NewReader("a\nb\nc\n"), streamTestFailingWriter{},
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
		`{"type":"system","subtype":"init","mcp_servers":[null,{"name":1}]}`,
		`{"type":"assistant","message":{"id":"msg_1","model":"m","content":[]},"error":null}`,
		`{"type":"assistant","message":{"id":"x","model":"<synthetic>"},"error":{"type":"x"}}`,
		`{"type":"assistant","message":{"id":"m1","content":[]},"parent_tool_use_id":null}`,
		`{"type":"assistant","message":{"id":7},"parent_tool_use_id":{}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := ParseLine(data)
		// Counting turns against a budget never panics, and a line is at
		// most one turn.
		st := &streamState{obs: ObserverFunc(func(Observation) {}), job: &jobs.Job{MaxTurns: 1}, stop: func(error) {}}
		st.line(data)
		if st.turns > 1 || (st.turns == 1) != (l.Turn != "") {
			t.Errorf("%d turns from one line (turn %q): %q", st.turns, l.Turn, data)
		}
		for _, tool := range l.ToolsUnavailable() {
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

// What a session could not do, from its stream: a permission rule's
// denial of its own server's tool (2.1.197's text, 2.1.332's event; a
// hook's ask and another server's tool are not), and the servers it could
// not use (init failed, a missing tool of a server that did not connect,
// "not connected"; a missing tool of a connected server is the model's).
func TestStreamStateDenialsAndUnusable(t *testing.T) {
	job := &jobs.Job{Name: "j", Servers: []string{"web", "notes", "dead", "gone"}}
	user := func(text string) string {
		return `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":` +
			strconv.Quote(text) + `}],"is_error":true}]}}`
	}
	lines := []string{
		`{"type":"system","subtype":"init","session_id":"s","mcp_servers":[{"name":"web","status":"connected"},{"name":"notes","status":"connected"},{"name":"dead","status":"failed"}]}`,
		user("Claude requested permissions to use mcp__web__echo, but you haven't granted it yet."),
		user("Claude requested permissions to use mcp__other__x, but you haven't granted it yet."),
		`{"type":"system","subtype":"permission_denied","tool_name":"mcp__notes__echo","tool_use_id":"t2","message":"m"}`,
		`{"type":"system","subtype":"permission_denied","tool_name":"mcp__notes__ask","decision_reason_type":"hook"}`,
		user("<tool_use_error>Error: No such tool available: mcp__notes__nope</tool_use_error>"),
		user("<tool_use_error>Error: No such tool available: mcp__dead__echo</tool_use_error>"),
		user(`MCP server "gone" is not connected`),
		`{"type":"result","subtype":"success","is_error":false,"num_turns":2,"permission_denials":[{"tool_name":"mcp__web__echo"}]}`,
	}
	var obs recordingObserver
	st := &streamState{obs: &obs, job: job}
	for _, l := range lines {
		st.line([]byte(l))
	}
	var out Outcome
	st.fill(&out)
	if !slices.Equal(out.Denied, []string{"mcp__web__echo", "mcp__notes__echo"}) {
		t.Errorf("Denied = %q", out.Denied)
	}
	want := []Unusable{{Server: "dead", Why: "failed at start"}, {Server: "gone", Why: "not connected"}}
	if !slices.Equal(out.Unusable, want) {
		t.Errorf("Unusable = %+v, want %+v", out.Unusable, want)
	}
	if !slices.Equal(obs.unusable, []string{"dead", "gone"}) {
		t.Errorf("the observer heard %q", obs.unusable)
	}
	judge(&out, st.result, job, nil, "")
	if out.Status != Failed || out.Reason != "permission denied: mcp__web__echo, mcp__notes__echo (not allowed for this job)" {
		t.Errorf("judged %s %q", out.Status, out.Reason)
	}
	out.Denied = nil
	judge(&out, st.result, job, nil, "")
	if out.Status != Failed || !strings.Contains(out.Reason, "server dead could not be used (failed at start)") {
		t.Errorf("judged %s %q", out.Status, out.Reason)
	}
	run := *job
	run.OnUnhealthy = jobs.Run
	judge(&out, st.result, &run, nil, "")
	if out.Status != Done {
		t.Errorf("on_unhealthy run: judged %s %q, want done (it ran without them by choice)", out.Status, out.Reason)
	}
}

type recordingObserver struct{ unusable []string }

func (o *recordingObserver) Observe(s Observation) {
	if s.Kind == SawUnusable {
		o.unusable = append(o.unusable, s.Server)
	}
}
