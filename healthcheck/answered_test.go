package healthcheck

import (
	"context"
	"testing"

	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// TestServerAnswered: only exec-server's call-answered event of the same
// call, server and attempt says the server itself answered.
func TestServerAnswered(t *testing.T) {
	ev := func(kind, id, server string, attempt int) Event {
		return Event{Kind: kind, ToolUseID: id, Server: server, Run: "r", Job: "j", Attempt: attempt, Verdict: AnsweredIsError}
	}
	tests := []struct {
		name   string
		events []Event
		id     string
		want   bool
	}{
		{"none", nil, "toolu_1", false},
		{"this call", []Event{ev(EventCallAnswered, "toolu_1", "notes", 1)}, "toolu_1", true},
		{"another call", []Event{ev(EventCallAnswered, "toolu_2", "notes", 1)}, "toolu_1", false},
		{"another server", []Event{ev(EventCallAnswered, "toolu_1", "beta", 1)}, "toolu_1", false},
		{"another attempt (a fake API reuses ids)", []Event{ev(EventCallAnswered, "toolu_1", "notes", 2)}, "toolu_1", false},
		{"another kind with the id (a blocked call)", []Event{ev(EventBlocked, "toolu_1", "notes", 1)}, "toolu_1", false},
		{"no id in the payload", []Event{ev(EventCallAnswered, "", "notes", 1)}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := ServerAnswered(tt.events, "r", "j", 1, "notes", tt.id)
			if ok != tt.want || (ok && v != AnsweredIsError) {
				t.Errorf("ServerAnswered = %q, %v; want %v", v, ok, tt.want)
			}
		})
	}
}

// TestRecordCallFailureServerAnswered: the CLI's own connection-closed
// text of both versions opens a stdio server, unless the server itself
// answered the call (the wire's evidence): then it is the tool's own
// failure, nothing is recorded and nothing counted. The evidence is asked
// for only when the text reads as the client's.
func TestRecordCallFailureServerAnswered(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		answered   bool
		wantStatus Status
		wantCode   FailureCode
		wantAsked  bool
	}{
		{"2.1.332, nothing answered: the connection closed", "Connection closed", false, StatusUnhealthy, CodeTransport, true},
		{"2.1.197, nothing answered", "MCP error -32000: Connection closed", false, StatusUnhealthy, CodeTransport, true},
		{"2.1.332, the server answered it", "Connection closed", true, "", CodeToolError, true},
		{"2.1.197, the server answered it", "MCP error -32000: Connection closed", true, "", CodeToolError, true},
		{"2.1.197, a go-sdk JSON-RPC error with the words", "MCP error 0: Connection closed", true, "", CodeToolError, true},
		{"a server's own text is not the client's: not asked", "could not open note 'Connection closed'", true, "", CodeTransport, false},
		{"nightwatch's restart error: the server died, answered or not", GuardRestarted + ` "notes" (it exited with code 3): this call did not complete`, false, StatusUnhealthy, CodeTransport, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, probe.Result{})
			f.srv.Transport = mcpconfig.Stdio
			asked := false
			cl, e := f.c.RecordCallFailure(context.Background(), "notes", f.srv, CallFailure{Text: tt.text,
				Answered: func() bool { asked = true; return tt.answered }})
			got := Status("")
			if e != nil && e.Status == StatusUnhealthy {
				got = e.Status
			}
			if got != tt.wantStatus || cl.Code != tt.wantCode || asked != tt.wantAsked || cl.ServerAnswered != (tt.answered && tt.wantAsked) {
				t.Errorf("status %q class %q asked %v answered %v (%+v); want %q %q asked %v", got, cl.Code, asked, cl.ServerAnswered, e,
					tt.wantStatus, tt.wantCode, tt.wantAsked)
			}
			if tt.answered && tt.wantAsked && (cl.Counts || cl.MarksUnhealthy || e != nil) {
				t.Errorf("an answered call counted or opened the server: %+v %+v", cl, e)
			}
		})
	}
}
