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

type sseEvent struct {
	Name string
	Data map[string]any
}

// post sends a Messages API request and returns the decoded SSE events (or,
// for a non-streaming request, the JSON body as a single event "json").
func post(t *testing.T, s *Server, path string, body any) []sseEvent {
	t.Helper()
	evs, err := postE(s, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// postE is post for goroutines other than the test's.
func postE(s *Server, path string, body any) ([]sseEvent, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	resp, err := http.Post(s.URL()+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s: %s", path, resp.Status)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			return nil, err
		}
		return []sseEvent{{Name: "json", Data: m}}, nil
	}
	var evs []sseEvent
	var name string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var m map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m); err != nil {
				return nil, fmt.Errorf("bad SSE data %q: %v", line, err)
			}
			if m["type"] != name {
				return nil, fmt.Errorf("event %q carries data of type %v", name, m["type"])
			}
			evs = append(evs, sseEvent{Name: name, Data: m})
		}
	}
	return evs, sc.Err()
}

// streamed summarises an SSE answer: the tool_use (id, name, input JSON) or
// the text, and the stop_reason.
type streamed struct {
	ToolID, ToolName, Input, Text, Stop string
}

func summarise(t *testing.T, evs []sseEvent) streamed {
	t.Helper()
	var names []string
	var out streamed
	for _, e := range evs {
		names = append(names, e.Name)
		switch e.Name {
		case "content_block_start":
			cb := e.Data["content_block"].(map[string]any)
			if cb["type"] == "tool_use" {
				out.ToolID, out.ToolName = cb["id"].(string), cb["name"].(string)
			}
		case "content_block_delta":
			d := e.Data["delta"].(map[string]any)
			switch d["type"] {
			case "input_json_delta":
				out.Input += d["partial_json"].(string)
			case "text_delta":
				out.Text += d["text"].(string)
			}
		case "message_delta":
			out.Stop = e.Data["delta"].(map[string]any)["stop_reason"].(string)
		}
	}
	want := "message_start content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("SSE events = %s, want %s", got, want)
	}
	return out
}

var someTools = []any{map[string]any{"name": "mcp__s__a", "input_schema": map[string]any{"type": "object"}}}

func msgs(m ...any) []any { return m }

func user(blocks ...any) map[string]any { return map[string]any{"role": "user", "content": blocks} }

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func toolUse(id, name, input string) map[string]any {
	return map[string]any{"role": "assistant", "content": []any{map[string]any{
		"type": "tool_use", "id": id, "name": name, "input": json.RawMessage(input)}}}
}

func toolResult(id string, content any, isErr bool) map[string]any {
	return map[string]any{"type": "tool_result", "tool_use_id": id, "content": content, "is_error": isErr}
}

func TestScriptedConversation(t *testing.T) {
	s := Start(t)
	prompt := "SESSION s1\nCALL mcp__s__a {\"x\": 1}\n  CALL mcp__s__b\n"
	first := user(text("<system-reminder>\ncontext\n</system-reminder>\n"), text(prompt))
	sys := map[string]any{"role": "system", "content": "agent list"}

	// Turn 1: the first CALL.
	r1 := summarise(t, post(t, s, "/v1/messages?beta=true", map[string]any{
		"model": "m", "stream": true, "tools": someTools, "messages": msgs(first, sys)}))
	if r1.ToolName != "mcp__s__a" || r1.Input != `{"x": 1}` || r1.Stop != "tool_use" || !strings.HasPrefix(r1.ToolID, "toolu_") {
		t.Fatalf("turn 1 = %+v", r1)
	}
	// Turn 2: one result in; the second CALL (no args → {}).
	conv := msgs(first, sys, toolUse(r1.ToolID, r1.ToolName, r1.Input),
		user(toolResult(r1.ToolID, []any{text("line1"), text("line2")}, false)))
	r2 := summarise(t, post(t, s, "/v1/messages", map[string]any{
		"model": "m", "stream": true, "tools": someTools, "messages": conv}))
	if r2.ToolName != "mcp__s__b" || r2.Input != "{}" || r2.Stop != "tool_use" || r2.ToolID == r1.ToolID {
		t.Fatalf("turn 2 = %+v", r2)
	}
	// Turn 3: both results in; the final text. The second result is a plain
	// string, an error, and followed by a reminder text block.
	conv = append(conv, toolUse(r2.ToolID, r2.ToolName, r2.Input),
		user(toolResult(r2.ToolID, "denied: R", true), text("<system-reminder>C</system-reminder>")))
	req3 := map[string]any{"model": "m", "stream": true, "tools": someTools, "messages": conv}
	r3 := summarise(t, post(t, s, "/v1/messages?beta=true", req3))
	if r3.Text != FinalText || r3.Stop != "end_turn" || r3.ToolName != "" {
		t.Fatalf("turn 3 = %+v", r3)
	}
	// A retried request must not record the results twice.
	summarise(t, post(t, s, "/v1/messages?beta=true", req3))

	want := []ToolResult{
		{Session: "s1", ToolUseID: r1.ToolID, ToolName: "mcp__s__a", Input: `{"x": 1}`, Content: "line1\nline2"},
		{Session: "s1", ToolUseID: r2.ToolID, ToolName: "mcp__s__b", Input: "{}", Content: "denied: R", IsError: true,
			Context: "<system-reminder>C</system-reminder>"},
	}
	got := s.ToolResults()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ToolResults =\n%+v\nwant\n%+v", got, want)
	}
	if got := s.SessionToolResults("s1"); len(got) != 2 {
		t.Errorf("SessionToolResults(s1) = %+v", got)
	}
	if got := s.SessionToolResults("other"); len(got) != 0 {
		t.Errorf("SessionToolResults(other) = %+v", got)
	}
	if n := s.Requests(); n != 4 {
		t.Errorf("Requests = %d, want 4", n)
	}
}

func TestNoCallsAndSideRequests(t *testing.T) {
	s := Start(t)
	// A prompt without CALL lines: text at once.
	r := summarise(t, post(t, s, "/v1/messages", map[string]any{
		"model": "m", "stream": true, "tools": someTools, "messages": msgs(user(text("hello")))}))
	if r.Text != FinalText || r.Stop != "end_turn" {
		t.Errorf("no-CALL answer = %+v", r)
	}
	// A side request without tools (title generation and the like) gets a
	// short text even though its prompt holds a CALL.
	r = summarise(t, post(t, s, "/v1/messages", map[string]any{
		"model": "haiku", "stream": true, "messages": msgs(user(text("CALL mcp__s__a {}")))}))
	if r.Text == "" || r.ToolName != "" || r.Stop != "end_turn" {
		t.Errorf("side answer = %+v", r)
	}
	// Non-streaming requests get a plain message.
	evs := post(t, s, "/v1/messages", map[string]any{
		"model": "m", "stream": false, "tools": someTools, "messages": msgs(user(text("CALL mcp__s__a {\"k\":\"v\"}")))})
	m := evs[0].Data
	content := m["content"].([]any)[0].(map[string]any)
	if m["type"] != "message" || m["stop_reason"] != "tool_use" || content["type"] != "tool_use" ||
		content["name"] != "mcp__s__a" || content["input"].(map[string]any)["k"] != "v" {
		t.Errorf("non-streaming answer = %v", m)
	}
	evs = post(t, s, "/v1/messages", map[string]any{"model": "m", "messages": msgs(user(text("hi")))})
	if m := evs[0].Data; m["stop_reason"] != "end_turn" {
		t.Errorf("non-streaming side answer = %v", m)
	}
	// count_tokens, GET, HEAD and unknown paths.
	evs = post(t, s, "/v1/messages/count_tokens", map[string]any{"model": "m", "messages": msgs(user(text("hi")))})
	if n, _ := evs[0].Data["input_tokens"].(float64); n < 1 {
		t.Errorf("count_tokens = %v", evs[0].Data)
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, s.URL()+"/v1/models", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || (method == http.MethodGet && strings.TrimSpace(string(body)) != "{}") {
			t.Errorf("%s = %s %q", method, resp.Status, body)
		}
	}
	post(t, s, "/api/something", map[string]any{"x": 1})
	if u := s.Unknown(); len(u) != 1 || !strings.Contains(u[0], "/api/something") {
		t.Errorf("Unknown = %q", u)
	}
	if len(s.ToolResults()) != 0 {
		t.Errorf("ToolResults = %+v, want none", s.ToolResults())
	}
}

// TestConcurrentSessions runs several conversations at once against one
// fake; each must see its own script and results.
func TestConcurrentSessions(t *testing.T) {
	s := Start(t)
	const sessions, calls = 8, 3
	var wg sync.WaitGroup
	ids := make([][]string, sessions)
	for i := range sessions {
		wg.Go(func() {
			prompt := fmt.Sprintf("SESSION c%d\n", i)
			for k := range calls {
				prompt += fmt.Sprintf("CALL tool_%d_%d {\"k\":%d}\n", i, k, k)
			}
			conv := msgs(user(text(prompt)))
			for k := 0; ; k++ {
				evs, err := postE(s, "/v1/messages", map[string]any{
					"model": "m", "stream": true, "tools": someTools, "messages": conv})
				if err != nil {
					t.Errorf("session %d: %v", i, err)
					return
				}
				r := summarise(t, evs)
				if k == calls {
					if r.Text != FinalText {
						t.Errorf("session %d: final answer %+v", i, r)
					}
					return
				}
				if want := fmt.Sprintf("tool_%d_%d", i, k); r.ToolName != want {
					t.Errorf("session %d turn %d: tool %q, want %q", i, k, r.ToolName, want)
					return
				}
				ids[i] = append(ids[i], r.ToolID)
				conv = append(conv, toolUse(r.ToolID, r.ToolName, r.Input),
					user(toolResult(r.ToolID, fmt.Sprintf("result %d/%d", i, k), false)))
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range sessions {
		got := s.SessionToolResults(fmt.Sprintf("c%d", i))
		if len(got) != calls {
			t.Fatalf("session %d: %d results, want %d", i, len(got), calls)
		}
		for k, r := range got {
			if r.ToolUseID != ids[i][k] || r.Content != fmt.Sprintf("result %d/%d", i, k) ||
				r.ToolName != fmt.Sprintf("tool_%d_%d", i, k) {
				t.Errorf("session %d result %d = %+v", i, k, r)
			}
			if seen[r.ToolUseID] {
				t.Errorf("tool_use id %s reused", r.ToolUseID)
			}
			seen[r.ToolUseID] = true
		}
	}
}

func TestParseScript(t *testing.T) {
	session, calls := ParseScript("intro\nSESSION  abc \n\tCALL  mcp__x__y   {\"a\": [1, 2]}  \nCALL z\nCALLx q\nnot CALL a {}\nSESSION other\n")
	if session != "abc" {
		t.Errorf("session = %q", session)
	}
	want := []Call{{"mcp__x__y", `{"a": [1, 2]}`}, {"z", "{}"}}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("calls = %q, want %q", calls, want)
	}
}

// deferredList is the shape of the list 2.1.332 sends with the opening
// turn: the MCP tools it offers through ToolSearch instead of directly.
const deferredList = "The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded — " +
	"calling them directly will fail with InputValidationError. Use ToolSearch with query \"select:<name>[,<name>...]\" " +
	"to load tool schemas before calling them:\nmcp__s__a\nmcp__s__b"

const hint = "\n\nThis tool's input schema was not in your prompt when you called it. The input schema is: " +
	`{"type":"object"}` + "\nIf your input does not match this schema, correct it and call the tool again. " +
	"If it matches, the error above has another cause. If the corrected call fails the same way, call ToolSearch " +
	`with query "select:mcp__s__b" to load the tool, then call it again.`

// TestEveryCLIVersionsConversation drives one script through the
// conversation shapes of each supported CLI version: where the prompt, the
// deferred-tools list and a hook's additionalContext sit, which tools are
// offered, and the schema hint on a deferred tool's error. The fake must
// run the same script and record the same results for all of them.
func TestEveryCLIVersionsConversation(t *testing.T) {
	const prompt = "SESSION v\nCALL mcp__s__a {\"x\": 1}\nCALL mcp__s__b {}"
	toolSearch := []any{map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}},
		map[string]any{"name": "ToolSearch", "input_schema": map[string]any{"type": "object"}}}
	reminder := func(s string) map[string]any { return text("<system-reminder>\n" + s + "\n</system-reminder>") }
	sysMsg := func(s string) map[string]any { return map[string]any{"role": "system", "content": s} }
	const ctxA = "PostToolUse:mcp__s__a hook additional context: CTX-A"
	const ctxB = "PostToolUseFailure:mcp__s__b hook additional context: CTX-B\nsecond line"

	type shape struct {
		tools   []any
		opening []any // messages before the first assistant turn
		// after returns what the CLI sends after a tool_result: the
		// tool_result's own user message and any further messages.
		after      func(id, content string, isErr bool, ctx string) []any
		toolSearch bool
	}
	shapes := map[string]shape{
		"2.1.197": {
			tools:   someTools,
			opening: msgs(user(reminder("currentDate"), text(prompt)), sysMsg("Available agent types")),
			after: func(id, content string, isErr bool, ctx string) []any {
				return msgs(user(toolResult(id, content, isErr), reminder(ctx)))
			},
		},
		"2.1.332 (system messages)": {
			tools:      toolSearch,
			toolSearch: true,
			opening:    msgs(user(reminder("Attribution"), text(prompt)), sysMsg("# Environment\n\n"+deferredList)),
			after: func(id, content string, isErr bool, ctx string) []any {
				if isErr {
					content += hint
				}
				return msgs(user(toolResult(id, content, isErr)), sysMsg(ctx))
			},
		},
		"2.1.332 (user messages)": {
			tools:      toolSearch,
			toolSearch: true,
			opening:    msgs(user(text(deferredList)), user(reminder("Attribution"), text(prompt))),
			after: func(id, content string, isErr bool, ctx string) []any {
				if isErr {
					content += hint
				}
				return msgs(user(toolResult(id, content, isErr)),
					map[string]any{"role": "user", "content": []any{text(ctx)}})
			},
		},
	}
	for name, sh := range shapes {
		t.Run(name, func(t *testing.T) {
			s := Start(t)
			conv := slices.Clone(sh.opening)
			ask := func() streamed {
				return summarise(t, post(t, s, "/v1/messages", map[string]any{
					"model": "m", "stream": true, "tools": sh.tools, "messages": conv}))
			}
			r1 := ask()
			if r1.ToolName != "mcp__s__a" || r1.Input != `{"x": 1}` {
				t.Fatalf("turn 1 = %+v, want the first CALL", r1)
			}
			conv = append(conv, toolUse(r1.ToolID, r1.ToolName, r1.Input))
			conv = append(conv, sh.after(r1.ToolID, "ok-a", false, ctxA)...)
			r2 := ask()
			if r2.ToolName != "mcp__s__b" || r2.Input != "{}" {
				t.Fatalf("turn 2 = %+v, want the second CALL", r2)
			}
			conv = append(conv, toolUse(r2.ToolID, r2.ToolName, r2.Input))
			conv = append(conv, sh.after(r2.ToolID, "upstream returned 503", true, ctxB)...)
			if r3 := ask(); r3.Text != FinalText {
				t.Fatalf("turn 3 = %+v, want the final text", r3)
			}

			got := s.SessionToolResults("v")
			if len(got) != 2 {
				t.Fatalf("results %+v, want 2", got)
			}
			a, b := got[0], got[1]
			if a.ToolName != "mcp__s__a" || a.Content != "ok-a" || a.IsError || a.SchemaHint != "" ||
				!slices.Equal(a.HookContext, []string{ctxA}) || !strings.Contains(a.Context, "CTX-A") {
				t.Errorf("first result = %+v", a)
			}
			wantHint := ""
			if sh.toolSearch {
				wantHint = hint
			}
			if b.ToolName != "mcp__s__b" || b.Content != "upstream returned 503" || !b.IsError ||
				b.SchemaHint != wantHint || b.ModelSaw() != "upstream returned 503"+wantHint ||
				!slices.Equal(b.HookContext, []string{ctxB}) {
				t.Errorf("second result = %+v\nwant content %q, hint %q, hook context %q", b, "upstream returned 503", wantHint, ctxB)
			}
			for _, r := range s.RequestLog() {
				if r.Main && r.ToolSearch != sh.toolSearch {
					t.Errorf("request %+v: ToolSearch %v, want %v", r, r.ToolSearch, sh.toolSearch)
				}
			}
		})
	}
}

func TestSplitSchemaHint(t *testing.T) {
	for _, c := range []struct{ in, own, hint string }{
		{"plain", "plain", ""},
		{"STUB isError text" + hint, "STUB isError text", hint},
		{"", "", ""},
		{hint, "", hint},
		{"two\n\nparagraphs", "two\n\nparagraphs", ""},
	} {
		own, h := splitSchemaHint(c.in)
		if own != c.own || h != c.hint || own+h != c.in {
			t.Errorf("splitSchemaHint(%q) = %q, %q; want %q, %q", c.in, own, h, c.own, c.hint)
		}
	}
}

func TestHookContext(t *testing.T) {
	got := hookContext([]string{
		"<system-reminder>\nPreToolUse:mcp__s__a hook additional context: A\n</system-reminder>",
		"PostToolUse:mcp__s__a hook additional context: B",
		"<system-reminder>\nunrelated reminder\n</system-reminder>",
		"The following MCP servers are still connecting",
	})
	want := []string{"PreToolUse:mcp__s__a hook additional context: A", "PostToolUse:mcp__s__a hook additional context: B"}
	if !slices.Equal(got, want) {
		t.Errorf("hookContext = %q, want %q", got, want)
	}
}
