package serverguard

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/sessionstop"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
)

// TestAnnouncerAnswered: an Answered event reaches the events file as
// call-answered with the server, tool, tool_use_id, how it was answered
// (Verdict) and the attempt of the session, for the hook and the session
// to find.
func TestAnnouncerAnswered(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	env := map[string]string{knobs.EnvEvents[0]: events, sessionstop.DirEnv: statedir.Attempt(dir, "r1", "j1", 2)}
	notify := Announcer(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, "notes", io.Discard)
	if notify == nil {
		t.Fatal("no announcer with an events file")
	}
	notify(Event{Kind: Answered, Tool: "fail", ToolUseID: "toolu_1", Reason: AnsweredIsError})
	tail := healthcheck.EventTail{Path: events}
	got := tail.Next()
	if len(got) != 1 {
		t.Fatalf("events %+v", got)
	}
	ev := got[0]
	if ev.Kind != healthcheck.EventCallAnswered || ev.Server != "notes" || ev.Tool != "fail" || ev.ToolUseID != "toolu_1" ||
		ev.Verdict != healthcheck.AnsweredIsError || ev.Reason != "" || ev.Run != "r1" || ev.Job != "j1" || ev.Attempt != 2 {
		t.Errorf("event %+v", ev)
	}
	if v, ok := healthcheck.ServerAnswered(got, "r1", "j1", 2, "notes", "toolu_1"); !ok || v != healthcheck.AnsweredIsError {
		t.Errorf("ServerAnswered = %q, %v", v, ok)
	}
}
