package session

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// evidenceUse is an assistant event calling tool with id.
func evidenceUse(id, tool string) string {
	return `{"type":"assistant","message":{"content":[{"type":"tool_use","id":` + evidenceQuote(id) + `,"name":` +
		evidenceQuote(tool) + `,"input":{}}]},"session_id":"s"}`
}

// evidenceResult is a user event answering id with text, as both CLIs
// print it (a list of text blocks); isError as the CLI marks it.
func evidenceResult(id, text string, isError bool) string {
	e := ""
	if isError {
		e = `,"is_error":true`
	}
	return `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":` + evidenceQuote(id) +
		`,"content":[{"type":"text","text":` + evidenceQuote(text) + `}]` + e + `}]},"session_id":"s"}`
}

// evidenceStringResult is the same with the content as a plain string,
// the way the CLI writes its own <tool_use_error> texts.
func evidenceStringResult(id, text string) string {
	return `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":` + evidenceQuote(id) +
		`,"content":` + evidenceQuote(text) + `,"is_error":true}]},"session_id":"s"}`
}

func evidenceQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

const (
	evidenceInit    = `{"type":"system","subtype":"init","session_id":"s","mcp_servers":[{"name":"notes","status":"connected"},{"name":"search","status":"connected"},{"name":"beta","status":"connected"}]}`
	evidenceResult0 = `{"type":"result","subtype":"success","is_error":false,"num_turns":3,"session_id":"s","permission_denials":[]}`
	// 2.1.332's hint after a failed call of a deferred tool (§6.3).
	evidenceHint = "\n\nThis tool's input schema was not in your prompt when you called it. The input schema is: {\"type\":\"object\"}\n" +
		"If your input does not match this schema, correct it and call the tool again. If it matches, the error above has another cause. " +
		`If the corrected call fails the same way, call ToolSearch with query "select:mcp__notes__open" to load the tool, then call it again.`
)

// evidenceBatch: notes is stdio, search is HTTP, beta stdio.
func evidenceBatch() (*jobs.Batch, *jobs.Job) {
	job := &jobs.Job{Name: "j", Servers: []string{"notes", "search", "beta"}, OnUnhealthy: jobs.Defer}
	b := &jobs.Batch{Servers: []*jobs.Server{
		{Name: "notes", MCP: mcpconfig.Server{Name: "notes", Transport: mcpconfig.Stdio}},
		{Name: "search", MCP: mcpconfig.Server{Name: "search", Transport: mcpconfig.HTTP}},
		{Name: "beta", MCP: mcpconfig.Server{Name: "beta", Transport: mcpconfig.Stdio}},
	}, Jobs: []*jobs.Job{job}}
	return b, job
}

type evidenceObserver struct{ seen []Observation }

func (o *evidenceObserver) Observe(s Observation) { o.seen = append(o.seen, s) }

func (o *evidenceObserver) kinds(k ObservationKind) []string {
	var out []string
	for _, s := range o.seen {
		if s.Kind == k {
			out = append(out, s.Server)
		}
	}
	return out
}

// TestCallLedger: the attempt's calls, judged from the stream on both
// CLIs' exact texts. A call lost with its server (the CLI's own text of a
// failed call) and never answered later fails the job, naming the tool and
// the server, without stopping the attempt; the same words in a
// successful result or in a server's own isError text change nothing;
// only the CLI's word that a stdio server is gone stops the attempt.
func TestCallLedger(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		// reason is the judged reason ("" for done); abandon the servers
		// the observer was told to stop the attempt for; down the servers
		// it was told the session could not use.
		reason  string
		abandon []string
		down    []string
	}{
		{"2.1.332: a stdio server dies during the only call",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", "Connection closed", true)},
			"call to mcp__notes__open lost with its server notes: Connection closed", nil, nil},
		{"2.1.197: the same",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", "MCP error -32000: Connection closed", true)},
			"call to mcp__notes__open lost with its server notes: MCP error -32000: Connection closed", nil, nil},
		{"lost, then the same tool answered (the CLI respawned the server)",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", "Connection closed", true),
				evidenceUse("toolu_2", "mcp__notes__open"), evidenceResult("toolu_2", "note 42: groceries", false)},
			"", nil, nil},
		{"lost, and only another tool answered",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", "Connection closed", true),
				evidenceUse("toolu_2", "mcp__notes__list"), evidenceResult("toolu_2", "1 note", false)},
			"call to mcp__notes__open lost with its server notes: Connection closed", nil, nil},
		{"answered before, lost after",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", "ok", false),
				evidenceUse("toolu_2", "mcp__notes__open"), evidenceResult("toolu_2", "Connection closed", true)},
			"call to mcp__notes__open lost with its server notes: Connection closed", nil, nil},
		{"2.1.332: an HTTP server killed before the call",
			[]string{evidenceUse("toolu_1", "mcp__search__query"),
				evidenceResult("toolu_1", "ECONNREFUSED: Unable to connect. Is the computer able to access the url?", true)},
			"call to mcp__search__query lost with its server search: ECONNREFUSED: Unable to connect. Is the computer able to access the url?", nil, nil},
		{"2.1.197: an HTTP server killed during the call",
			[]string{evidenceUse("toolu_1", "mcp__search__query"), evidenceResult("toolu_1",
				"The socket connection was closed unexpectedly. For more information, pass `verbose: true` in the second argument to fetch()", true)},
			"call to mcp__search__query lost with its server search: The socket connection was closed unexpectedly. For more information, pass `verbose: true` in the second argument to fetch()", nil, nil},
		{"both: a timeout",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", `MCP server "notes" tool "open" timed out after 15s`, true)},
			`call to mcp__notes__open lost with its server notes: MCP server "notes" tool "open" timed out after 15s`, nil, nil},
		{"both: a stdio server not connected is gone for the session: the attempt stops",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", `MCP server "notes" is not connected`, true)},
			"server notes could not be used (not connected)", []string{"notes"}, []string{"notes"}},
		{"2.1.332: an HTTP server not connected is reconnected in the background: no stop, but the call is lost",
			[]string{evidenceUse("toolu_1", "mcp__search__query"), evidenceResult("toolu_1", `MCP server "search" is not connected`, true)},
			`call to mcp__search__query lost with its server search: MCP server "search" is not connected`, nil, []string{"search"}},
		{"2.1.332: an HTTP server not connected, then back",
			[]string{evidenceUse("toolu_1", "mcp__search__query"), evidenceResult("toolu_1", `MCP server "search" is not connected`, true),
				evidenceUse("toolu_2", "mcp__search__query"), evidenceResult("toolu_2", "3 hits", false)},
			"", nil, []string{"search"}},
		{"2.1.332: a stdio server disconnected",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceStringResult("toolu_1",
				"<tool_use_error>Error: No such tool available: mcp__notes__open. Its MCP server 'notes' has disconnected. Continue without this tool; it becomes callable again only if the server reconnects.</tool_use_error>")},
			"server notes could not be used (disconnected)", []string{"notes"}, []string{"notes"}},
		{"2.1.332: not tried again for 6 s is transient: no stop",
			[]string{evidenceUse("toolu_1", "mcp__search__query"), evidenceStringResult("toolu_1",
				`<tool_use_error>Error: No such tool available: mcp__search__query. MCP server "search" did not connect when it was last tried, and is not tried again for 6 s.</tool_use_error>`),
				evidenceUse("toolu_2", "mcp__search__query"), evidenceResult("toolu_2", "3 hits", false)},
			"", nil, nil},
		{"2.1.332: tried again and could not, then answered",
			[]string{evidenceUse("toolu_1", "mcp__search__query"), evidenceResult("toolu_1",
				`Claude Code tried to connect to MCP server "search" again and could not. It can be tried again in 10 s.`, true),
				evidenceUse("toolu_2", "mcp__search__query"), evidenceResult("toolu_2", "3 hits", false)},
			"", nil, nil},
		{"2.1.332: Connection closed with the schema hint",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", "Connection closed"+evidenceHint, true)},
			"call to mcp__notes__open lost with its server notes: Connection closed", nil, nil},
		{"a successful result holding the CLI's sentences",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1",
				"MCP server \"beta\" is not connected\nClaude requested permissions to use mcp__beta__echo, but you haven't granted it yet.", false),
				evidenceUse("toolu_2", "mcp__notes__open"), evidenceResult("toolu_2", `MCP server "beta" is not connected`, false),
				evidenceUse("toolu_3", "mcp__notes__open"), evidenceResult("toolu_3", "Connection closed", false)},
			"", nil, nil},
		{"a server's own isError text quoting the CLI",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", "could not open note 'Connection closed'", true),
				evidenceUse("toolu_2", "mcp__notes__open"), evidenceResult("toolu_2", `note says: MCP server "beta" is not connected`, true)},
			"", nil, nil},
		{"a server's own isError text quoting the CLI, with the schema hint",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", "could not open note 'Connection closed'"+evidenceHint, true)},
			"", nil, nil},
		{"another job's server lost: not this job's concern",
			[]string{evidenceUse("toolu_1", "mcp__other__x"), evidenceResult("toolu_1", "Connection closed", true)},
			"", nil, nil},
		{"a task the server answered with is no lost call",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", "Unsupported result type 'task' for tools/call", true)},
			"", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, job := evidenceBatch()
			obs := &evidenceObserver{}
			st := &streamState{obs: obs, job: job, batch: b}
			for _, l := range append(append([]string{evidenceInit}, tt.lines...), evidenceResult0) {
				st.line([]byte(l))
			}
			out := Outcome{ExitCode: 0}
			st.fill(&out)
			judge(&out, st.result, job, nil, "")
			if out.Reason != tt.reason || (out.Status == Done) != (tt.reason == "") {
				t.Errorf("judged %s %q, want %q", out.Status, out.Reason, tt.reason)
			}
			if got := obs.kinds(SawUnusable); !slices.Equal(got, tt.abandon) {
				t.Errorf("told to stop the attempt for %q, want %q", got, tt.abandon)
			}
			if got := obs.kinds(SawServer); !slices.Equal(got, tt.down) {
				t.Errorf("told the session could not use %q, want %q", got, tt.down)
			}
			if len(out.Denied) != 0 {
				t.Errorf("denied %q", out.Denied)
			}
		})
	}
}

// TestCallLedgerKilled: the calls a session nightwatch stopped had in
// flight were lost to the stop, not to their servers.
func TestCallLedgerKilled(t *testing.T) {
	b, job := evidenceBatch()
	st := &streamState{obs: &evidenceObserver{}, job: job, batch: b}
	for _, l := range []string{evidenceInit, evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", "Connection closed", true)} {
		st.line([]byte(l))
	}
	out := Outcome{ExitCode: -1, KilledBy: KilledTimeout}
	st.fill(&out)
	if len(out.Unusable) != 0 {
		t.Errorf("unusable %+v after a timeout's kill", out.Unusable)
	}
}

// TestCallLedgerOnUnhealthyRun: a job that runs without its servers by
// choice is done without them, lost call or not: the night says it ran
// without them.
func TestCallLedgerOnUnhealthyRun(t *testing.T) {
	b, job := evidenceBatch()
	job.OnUnhealthy = jobs.Run
	st := &streamState{obs: &evidenceObserver{}, job: job, batch: b}
	for _, l := range []string{evidenceInit, evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", "Connection closed", true), evidenceResult0} {
		st.line([]byte(l))
	}
	var out Outcome
	st.fill(&out)
	judge(&out, st.result, job, nil, "")
	if out.Status != Done || !slices.Equal(out.Unusable, []Unusable{{Server: "notes", Tool: "mcp__notes__open", Why: "Connection closed"}}) {
		t.Errorf("judged %s %q, unusable %+v", out.Status, out.Reason, out.Unusable)
	}
}

// TestCallLedgerBlocked: a call nightwatch's own hook blocked (its server
// was down) and never answered later is lost with its server; answered by
// a later call of the same tool, it is not.
func TestCallLedgerBlocked(t *testing.T) {
	const blockText = `PreToolUse:mcp__search__query hook error: nightwatch: MCP server "search" is unreachable`
	for _, tt := range []struct {
		name   string
		lines  []string
		reason string
	}{
		{"blocked, never answered", []string{evidenceUse("toolu_1", "mcp__search__query"), evidenceResult("toolu_1", blockText, true)},
			"call to mcp__search__query lost with its server search: " + blockedWhy},
		{"blocked, then answered", []string{evidenceUse("toolu_1", "mcp__search__query"), evidenceResult("toolu_1", blockText, true),
			evidenceUse("toolu_2", "mcp__search__query"), evidenceResult("toolu_2", "3 hits", false)}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, job := evidenceBatch()
			st := &streamState{obs: &evidenceObserver{}, job: job, batch: b, blocked: map[string]bool{"toolu_1": true}}
			for _, l := range append(append([]string{evidenceInit}, tt.lines...), denialsOf("toolu_1")) {
				st.line([]byte(l))
			}
			out := Outcome{}
			st.fill(&out)
			judge(&out, st.result, job, nil, "")
			if out.Reason != tt.reason || len(out.Denied) != 0 {
				t.Errorf("judged %s %q denied %q, want %q", out.Status, out.Reason, out.Denied, tt.reason)
			}
		})
	}
}

// denialsOf is a result whose permission_denials list the calls ids.
func denialsOf(ids ...string) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, `{"tool_name":"mcp__search__query","tool_use_id":"`+id+`","tool_input":{}}`)
	}
	return `{"type":"result","subtype":"success","is_error":false,"num_turns":2,"session_id":"s","permission_denials":[` + strings.Join(parts, ",") + `]}`
}

// TestDenialsFromStructure: permission denials come from the result's
// permission_denials less the calls nightwatch's own hook blocked, from
// 2.1.332's permission_denied event and tool_result_meta, and only as a
// fallback from the CLI's "not granted" text of a failed call.
func TestDenialsFromStructure(t *testing.T) {
	const notGranted = "Claude requested permissions to use mcp__notes__open, but you haven't granted it yet."
	denials := func(ids ...string) string {
		var parts []string
		for _, id := range ids {
			parts = append(parts, `{"tool_name":"mcp__notes__open","tool_use_id":"`+id+`","tool_input":{}}`)
		}
		return `{"type":"result","subtype":"success","is_error":false,"num_turns":2,"session_id":"s","permission_denials":[` + strings.Join(parts, ",") + `]}`
	}
	meta := func(id, text, decision, source string) string {
		return `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":` +
			evidenceQuote(text) + `,"is_error":true}]},"tool_result_meta":[{"id":"` + id + `","permission_decision":{"decision":"` +
			decision + `","source":"` + source + `","reason_type":"rule"}}]}`
	}
	tests := []struct {
		name    string
		lines   []string
		blocked []string
		want    []string
	}{
		{"2.1.197: not granted, in permission_denials",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", notGranted, true), denials("toolu_1")},
			nil, []string{"mcp__notes__open"}},
		{"2.1.197: nightwatch's hook blocked it: no denial",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", `nightwatch: MCP server "notes" is unreachable`, true), denials("toolu_1")},
			[]string{"toolu_1"}, nil},
		{"2.1.332: nightwatch's hook blocked it (hook error framing, meta says hook): no denial",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"),
				meta("toolu_1", `PreToolUse:mcp__notes__open hook error: nightwatch: MCP server "notes" is unreachable`, "reject", "hook"), denials("toolu_1")},
			[]string{"toolu_1"}, nil},
		{"2.1.197: dontAsk's text, not the not-granted one, still a denial",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1",
				"Permission to use mcp__notes__open has been denied because Claude Code is running in don't ask mode.", true), denials("toolu_1")},
			nil, []string{"mcp__notes__open"}},
		{"2.1.332: tool_result_meta rejects by config, no denial list",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), meta("toolu_1", "denied for reasons", "reject", "config"), evidenceResult0},
			nil, []string{"mcp__notes__open"}},
		{"2.1.332: permission_denied event",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"),
				`{"type":"system","subtype":"permission_denied","tool_name":"mcp__notes__open","tool_use_id":"toolu_1","message":"m"}`, evidenceResult0},
			nil, []string{"mcp__notes__open"}},
		{"fallback: the not-granted text of a failed call",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", notGranted, true), evidenceResult0},
			nil, []string{"mcp__notes__open"}},
		{"the not-granted text of a failed call the CLI says it accepted",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), meta("toolu_1", notGranted, "accept", "config"), evidenceResult0},
			nil, nil},
		{"the not-granted text in a successful result",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", notGranted, false), evidenceResult0},
			nil, nil},
		{"the not-granted text inside a longer failed result",
			[]string{evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", "page: "+notGranted, true), evidenceResult0},
			nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, job := evidenceBatch()
			st := &streamState{obs: &evidenceObserver{}, job: job, batch: b}
			for _, l := range append([]string{evidenceInit}, tt.lines...) {
				st.line([]byte(l))
			}
			st.blocked = map[string]bool{}
			for _, id := range tt.blocked {
				st.blocked[id] = true
			}
			var out Outcome
			st.fill(&out)
			if !slices.Equal(out.Denied, tt.want) {
				t.Errorf("Denied = %q, want %q", out.Denied, tt.want)
			}
		})
	}
}

// TestRefusedRepeatIsNeitherDeniedNorLost: a call the hook refused as a
// repeat of a side effect an earlier attempt made is in the result's
// permission_denials, but it is nightwatch's own refusal of work already
// done: no permission denial, no call lost with its server, the job done.
// (Found by the chaos night: a retry after a SIGKILLed supervisor failed
// for good as "permission denied".)
func TestRefusedRepeatIsNeitherDeniedNorLost(t *testing.T) {
	const refusal = `nightwatch: mcp__search__query already succeeded in attempt 1 of this job with the same input; treat it as done`
	b, job := evidenceBatch()
	st := &streamState{obs: &evidenceObserver{}, job: job, batch: b}
	st.blocked, st.refused = blockedCalls([]healthcheck.Event{
		{Kind: healthcheck.EventRepeatRefused, Session: "s", ToolUseID: "toolu_1", Server: "search", Tool: "mcp__search__query"},
	}, "s")
	for _, l := range []string{evidenceInit, evidenceUse("toolu_1", "mcp__search__query"), evidenceResult("toolu_1", refusal, true), denialsOf("toolu_1")} {
		st.line([]byte(l))
	}
	out := Outcome{}
	st.fill(&out)
	judge(&out, st.result, job, nil, "")
	if out.Status != Done || len(out.Denied) != 0 || len(out.Unusable) != 0 {
		t.Errorf("judged %s %q, denied %q, unusable %+v; want done", out.Status, out.Reason, out.Denied, out.Unusable)
	}
}

// TestCallLedgerServerAnswered: a call whose error text is the CLI's own
// "Connection closed" (both versions' texts) is lost with its server,
// unless its exec-server saw the server itself answer it (a call-answered
// event of this attempt): then it is the tool's own failure. Another
// attempt's or another call's answer changes nothing.
func TestCallLedgerServerAnswered(t *testing.T) {
	answered := func(id, run, job string, attempt int) healthcheck.Event {
		return healthcheck.Event{Kind: healthcheck.EventCallAnswered, Server: "notes", Tool: "open", ToolUseID: id,
			Verdict: healthcheck.AnsweredIsError, Run: run, Job: job, Attempt: attempt}
	}
	for _, tt := range []struct {
		name   string
		text   string
		events []healthcheck.Event
		reason string
	}{
		{"2.1.332: answered by the server", "Connection closed", []healthcheck.Event{answered("toolu_1", "r", "j", 1)}, ""},
		{"2.1.197: answered by the server", "MCP error -32000: Connection closed", []healthcheck.Event{answered("toolu_1", "r", "j", 1)}, ""},
		{"no answer seen: lost", "Connection closed", nil, "call to mcp__notes__open lost with its server notes: Connection closed"},
		{"another call's answer", "Connection closed", []healthcheck.Event{answered("toolu_2", "r", "j", 1)},
			"call to mcp__notes__open lost with its server notes: Connection closed"},
		{"another attempt's answer", "Connection closed", []healthcheck.Event{answered("toolu_1", "r", "j", 2)},
			"call to mcp__notes__open lost with its server notes: Connection closed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, job := evidenceBatch()
			st := &streamState{obs: &evidenceObserver{}, job: job, batch: b, serverAnswered: serverAnsweredCalls(tt.events, "r", "j", 1)}
			for _, l := range []string{evidenceInit, evidenceUse("toolu_1", "mcp__notes__open"), evidenceResult("toolu_1", tt.text, true), evidenceResult0} {
				st.line([]byte(l))
			}
			out := Outcome{}
			st.fill(&out)
			judge(&out, st.result, job, nil, "")
			if out.Reason != tt.reason {
				t.Errorf("judged %s %q unusable %+v, want %q", out.Status, out.Reason, out.Unusable, tt.reason)
			}
		})
	}
}

// TestEarlyStopServerAnswered: the CLI's word that a stdio server is gone
// for the session (`is not connected`, 2.1.332's `has disconnected`) stops
// the attempt early, unless the stdio server itself answered the call with
// exactly those words: its exec-server wrote call-answered for the call
// before the answer left, so the stream finds it in the events file when
// the call's result comes. Then the night is told nothing, and the job is
// judged on its merits. Another attempt's or another call's answer does
// not count.
func TestEarlyStopServerAnswered(t *testing.T) {
	const disconnected = "<tool_use_error>Error: No such tool available: mcp__notes__open. Its MCP server 'notes' has disconnected. " +
		"Continue without this tool; it becomes callable again only if the server reconnects.</tool_use_error>"
	answered := func(id string, attempt int) *healthcheck.Event {
		return &healthcheck.Event{Kind: healthcheck.EventCallAnswered, Server: "notes", Tool: "open", ToolUseID: id,
			Verdict: healthcheck.AnsweredIsError, Run: "r", Job: "j", Attempt: attempt}
	}
	for _, tt := range []struct {
		name    string
		result  string
		event   *healthcheck.Event
		reason  string
		stopped bool
	}{
		{"not connected, the server's own answer", evidenceResult("toolu_1", `MCP server "notes" is not connected`, true),
			answered("toolu_1", 1), "", false},
		{"has disconnected, the server's own answer", evidenceResult("toolu_1", disconnected, true),
			answered("toolu_1", 1), "", false},
		{"not connected, naming another server, the server's own answer",
			evidenceResult("toolu_1", `MCP server "beta" is not connected`, true), answered("toolu_1", 1), "", false},
		{"not connected, no answer seen", evidenceResult("toolu_1", `MCP server "notes" is not connected`, true),
			nil, "server notes could not be used (not connected)", true},
		{"has disconnected, no answer seen", evidenceStringResult("toolu_1", disconnected),
			nil, "server notes could not be used (disconnected)", true},
		{"another call's answer", evidenceResult("toolu_1", `MCP server "notes" is not connected`, true),
			answered("toolu_2", 1), "server notes could not be used (not connected)", true},
		{"another attempt's answer", evidenceResult("toolu_1", `MCP server "notes" is not connected`, true),
			answered("toolu_1", 2), "server notes could not be used (not connected)", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, job := evidenceBatch()
			events := filepath.Join(t.TempDir(), "events.jsonl")
			log := &healthcheck.EventLog{Path: events}
			// An earlier attempt's answer of the same id, before the session.
			log.Append(*answered("toolu_1", 0))
			obs := &evidenceObserver{}
			tail := healthcheck.EventTail{Path: events}
			tail.SkipToEnd()
			st := &streamState{obs: obs, job: job, batch: b, answers: &answerTail{tail: tail, run: "r", job: "j", attempt: 1}}
			st.line([]byte(evidenceInit))
			st.line([]byte(evidenceUse("toolu_1", "mcp__notes__open")))
			if tt.event != nil {
				log.Append(*tt.event) // exec-server, before the answer leaves
			}
			st.line([]byte(tt.result))
			st.line([]byte(evidenceResult0))
			stopped := len(obs.kinds(SawUnusable)) != 0
			if stopped != tt.stopped || (len(obs.kinds(SawServer)) != 0) != tt.stopped {
				t.Errorf("told to stop %q, told of servers %q; want a stop %v", obs.kinds(SawUnusable), obs.kinds(SawServer), tt.stopped)
			}
			if got := obs.kinds(SawMissingTool); !tt.stopped && len(got) != 0 {
				t.Errorf("told of %d missing tools for the server's own answer", len(got))
			}
			out := Outcome{}
			st.fill(&out)
			judge(&out, st.result, job, nil, "")
			if out.Reason != tt.reason || (out.Status == Done) != (tt.reason == "") {
				t.Errorf("judged %s %q unusable %+v, want %q", out.Status, out.Reason, out.Unusable, tt.reason)
			}
		})
	}
}
