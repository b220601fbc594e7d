package supervisor

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// TestNightStdioServerRestartedMidSession: the job's stdio server exits
// right after answering the first of three calls (as soon as its answer is
// written, not after a delay: a busy machine's next call could otherwise
// reach the old process and get the restart error). exec-server starts it
// again under Claude Code and replays the handshake, so the next two calls
// are answered by the new process: the job is done in one attempt with all
// three answers, and the journal has nightwatch's server-restarted line.
func TestNightStdioServerRestartedMidSession(t *testing.T) {
	testkit.ForEachClaude(t, testNightStdioServerRestartedMidSession)
}

func testNightStdioServerRestartedMidSession(t *testing.T, version string) {
	f := newNightFixture(t)
	server := testkit.BuildTestServer(t)
	b := f.load(fmt.Sprintf(`version: 1
name: guard
state_dir: ./state
agent: {command: %s}
defaults: {timeout: 3m, stall_timeout: 2m, retries: 1, on_unhealthy: defer}
servers:
  notes: {command: %s}
jobs:
  - {name: g1, servers: [notes], allowed_tools: [mcp__notes], prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(server),
		jsonString(prompt("g1", `mcp__notes__quit {"after_answer":true}`, `mcp__notes__echo {"message":"two"}`, `mcp__notes__echo {"message":"three"}`))))

	s := f.run(b)
	if !s.AllDone() || s.Done != 1 {
		t.Fatalf("want the job done, got %+v", s.Jobs)
	}
	results := f.api.SessionToolResults("g1")
	var texts []string
	for _, r := range results {
		if r.IsError {
			t.Errorf("a call failed: %+v", r)
		}
		texts = append(texts, r.Content)
	}
	if len(texts) != 3 || !strings.Contains(texts[0], "bye") || !strings.Contains(texts[1], "two") || !strings.Contains(texts[2], "three") {
		t.Errorf("the model got %q, want the three answers", texts)
	}
	var started int
	var restarts []journal.Event
	for _, ev := range readJournalTypes(t, s.Journal) {
		switch ev.Type {
		case journal.JobStarted:
			started++
		case journal.ServerRestarted:
			restarts = append(restarts, ev)
		}
	}
	if started != 1 {
		t.Errorf("%d attempts, want 1", started)
	}
	if len(restarts) != 1 || restarts[0].Job != "g1" || restarts[0].Attempt != 1 || restarts[0].Server != "notes" ||
		restarts[0].By != journal.RestartedByNightwatch || !strings.Contains(restarts[0].Reason, "exited with code 3") {
		t.Errorf("server-restarted lines = %+v, want nightwatch's one for notes in g1's attempt 1", restarts)
	}
}

// TestNightStdioServerLostMidSession: the job's stdio server breaks for
// good mid-call (every new process exits at start). exec-server answers
// the call with its restart error, tries again within its bound, and gives
// the server up: the night journals server-lost and stops the attempt
// while the job's other server still works on a long call, and the job
// goes the way of a job whose server the session could not use (here
// on_unhealthy: skip). The night's maintenance runs once an hour here:
// the loss is acted on when exec-server writes it, not at a later wake.
func TestNightStdioServerLostMidSession(t *testing.T) {
	testkit.ForEachClaude(t, testNightStdioServerLostMidSession)
}

func testNightStdioServerLostMidSession(t *testing.T, version string) {
	f := newNightFixture(t)
	server := testkit.BuildTestServer(t)
	control := filepath.Join(f.dir, "notes.mode")
	b := f.load(fmt.Sprintf(`version: 1
name: guard
state_dir: ./state
agent: {command: %s}
defaults: {timeout: 3m, stall_timeout: 2m, retries: 1, on_unhealthy: skip}
servers:
  notes: {command: %s, args: ["--control", %s]}
  other: {command: %s}
jobs:
  - {name: g2, servers: [notes, other], allowed_tools: [mcp__notes, mcp__other], prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(server), jsonString(control), jsonString(server),
		jsonString(prompt("g2", `mcp__notes__break {"mode":"exit-at-start"}`, `mcp__other__slow {"ms":120000}`))))

	s := f.runWith(b, time.Hour)
	if s.Skipped != 1 {
		t.Fatalf("want the job skipped for its lost server, got %+v", s.Jobs)
	}
	var lost, ended *journal.Event
	events := readJournalTypes(t, s.Journal)
	for i, ev := range events {
		switch {
		case ev.Type == journal.ServerLost:
			lost = &events[i]
		case ev.Type == journal.JobSkipped && ev.Job == "g2":
			ended = &events[i]
		}
	}
	if lost == nil || lost.Job != "g2" || lost.Attempt != 1 || lost.Server != "notes" || !strings.Contains(lost.Reason, "restarted") {
		t.Fatalf("server-lost = %+v, want notes lost in g2's attempt 1", lost)
	}
	if ended == nil || !ended.Bounce || ended.Attempt != 1 || len(ended.Unusable) != 1 || ended.Unusable[0] != "notes" ||
		ended.Result == nil || ended.Result.KilledBy != "abandoned" {
		t.Errorf("the attempt's end = %+v, want it stopped (abandoned) with notes unusable", ended)
	}
	results := f.api.SessionToolResults("g2")
	if len(results) == 0 || !strings.Contains(results[0].Content, "nightwatch restarted MCP server") {
		t.Errorf("the break call's result = %+v, want the restart error", results)
	}
}
