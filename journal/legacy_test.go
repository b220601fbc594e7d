package journal

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The testdata/v0-*.jsonl journals were written by the release before the
// typed vocabulary (its own Journal.Append, before this package existed):
// every fact it folded into reason must come out in its field, and an
// unfinished one must resume.
func TestLegacyJournalReadsIntoFields(t *testing.T) {
	events, warnings, err := ReadWarnings("testdata/v0-finished.jsonl")
	if err != nil || len(warnings) > 0 {
		t.Fatalf("read: %v, %v", err, warnings)
	}
	byType := map[Type][]Event{}
	for _, ev := range events {
		byType[ev.Type] = append(byType[ev.Type], ev)
	}
	for _, typ := range Types {
		if typ == RunResumed {
			continue // the finished fixture was never resumed
		}
		switch typ {
		case ServerFinal: // newer than the v0 release (issue 10)
			continue
		case NightPaused, NightResumed, NightStopped, RunClosed: // newer too (issue 11)
			continue
		case SideEffect, TaskLost, ServerRestarted, ServerLost, CallHeld: // newer too (issue 20)
			continue
		case APITrialStarted, APITrialEnded: // newer too (issue 21)
			continue
		case OutageConfirmed: // newer too (issue 20's follow-up)
			continue
		}
		if len(byType[typ]) == 0 {
			t.Errorf("the fixture has no %s line: regenerate it with every type", typ)
		}
	}
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", what, got, want)
		}
	}
	states := byType[ServerState]
	check("first state", [4]string{string(states[0].Status), states[0].By, states[0].Code, states[0].Reason},
		[4]string{"healthy", "probe", "", ""})
	check("outage", [4]string{string(states[1].Status), states[1].By, states[1].Code, states[1].Reason},
		[4]string{"unhealthy", "call-failure", "transport", "MCP error -32000: Connection closed"})
	check("back", [3]string{states[2].By, states[2].Code, states[2].Reason}, [3]string{"reconnect", "", "restart notes"})
	check("reset", [3]string{string(states[3].Status), states[3].By, states[3].Server}, [3]string{"", "reset", "old"})
	check("blocked tool", [2]string{byType[CallBlocked][0].Tool, byType[CallBlocked][0].Reason}, [2]string{"mcp__notes__search", ""})
	check("unavailable tool", byType[ToolUnavailable][0].Tool, "mcp__notes__search")
	check("start id", [2]string{byType[SessionProcess][0].StartID, byType[SessionProcess][0].Reason}, [2]string{"771001", ""})
	check("folder", byType[JobStarted][0].Folder, "/var/lib/nightwatch/runs/20261130T010000Z-f1x7/digest/attempt-1")
	var actions []Action
	var servers []string
	for _, ev := range byType[Maintenance] {
		actions, servers = append(actions, ev.Action), append(servers, ev.Server)
	}
	check("maintenance actions", actions, []Action{Reconnect, Reprobe, Drop, Drop})
	check("maintenance servers", servers, []string{"notes", "notes", "old", "gone"})
	check("reconnect detail", byType[Maintenance][0].Reason, "restart notes")
	r := byType[JobFinished][0].Result
	check("result", *r, Result{Subtype: "success", NumTurns: 14, CostUSD: 0.06, DurationMS: 55000, SessionID: "a1", TerminalReason: "completed"})
	if k := byType[JobFinished][1].Result; k.KilledBy != "timeout" || k.ExitCode != -1 {
		t.Errorf("killed result = %+v", k)
	}
}

func TestLegacyJournalResumes(t *testing.T) {
	state := t.TempDir()
	data, err := os.ReadFile("testdata/v0-unfinished.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(state, "runs", "20261130T010000Z-u2f1.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, events, err := LatestUnfinished(state, "nightly")
	if err != nil || got != path {
		t.Fatalf("LatestUnfinished = %q, %v; want %s", got, err, path)
	}
	// The jobs' states and the night's cost: supervisor's
	// TestPlanFoldsALegacyJournal.
	r := Replay(events)
	if !r.Done["digest"] || r.Done["lint"] || !r.Running["triage"] || r.Attempts["triage"] != 2 || r.Started.IsZero() {
		t.Errorf("replay = %+v", r)
	}
	if len(r.Sessions) != 1 || r.Sessions[0].Job != "triage" || r.Sessions[0].Attempt != 2 ||
		r.Sessions[0].PID != 5003 || r.Sessions[0].StartID != "881003" {
		t.Errorf("left-over sessions = %+v, want triage#2 pid 5003 start 881003", r.Sessions)
	}
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(Event{Type: RunResumed, PID: 1}); err != nil {
		t.Fatal(err)
	}
	if evs, err := Read(path); err != nil || len(evs) != len(events)+1 || evs[len(evs)-1].Run != "20261130T010000Z-u2f1" {
		t.Errorf("after resume: %d events, %v", len(evs), err)
	}
}
