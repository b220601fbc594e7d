package serverguard

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/effects"
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

// TestTaskRecorder: a Tasked event lands in the job's ledger the session's
// environment names, with the attempt, server, tool, task id and
// tool_use_id (what the night reads to journal task-lost); the hook's
// record of the same call (2.1.332 fails it) adds no second task; other
// events write nothing; no ledger, no recorder.
func TestTaskRecorder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j1", effects.FileName)
	env := map[string]string{effects.PathEnv: path, effects.AttemptEnv: "2"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	record := TaskRecorder(getenv, "slowjobs", io.Discard)
	if record == nil {
		t.Fatal("no recorder with a ledger")
	}
	record(Event{Kind: Answered, Tool: "echo", ToolUseID: "toolu_0", Reason: AnsweredIsError})
	record(Event{Kind: Tasked, Tool: "echo", ToolUseID: "toolu_1", TaskID: "t-1"})
	// The hook's witness of the same call, after it (2.1.332).
	if err := effects.RecordTask(path, 2, "slowjobs", "echo", effects.TaskRef{ToolUseID: "toolu_1"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	l, err := effects.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	want := effects.Task{N: 1, Attempt: 2, Server: "slowjobs", Tool: "echo", ID: "t-1", ToolUseID: "toolu_1"}
	if len(l.Tasks) != 1 {
		t.Fatalf("tasks %+v, want one", l.Tasks)
	}
	got := l.Tasks[0]
	got.At = time.Time{}
	if got != want {
		t.Errorf("task %+v, want %+v", got, want)
	}
	if len(l.Calls) != 0 {
		t.Errorf("calls %+v, want none", l.Calls)
	}
	if TaskRecorder(func(string) (string, bool) { return "", false }, "slowjobs", io.Discard) != nil {
		t.Error("a recorder without a ledger")
	}
}
