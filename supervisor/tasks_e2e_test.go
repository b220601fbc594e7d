package supervisor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/report"
)

// TestNightTaskLeftRunning is issue 20's MCP tasks case on every supported
// version: a stdio server answers every tools/call with an MCP task (the
// 2026-07-28 tasks extension) although the session never asked for one.
// 2.1.332 fails the call with "Unsupported result type 'task'"; 2.1.197
// reads the answer as an empty success ("completed with no output";
// PostToolUse's tool_response is [] and the stream shows nothing else).
// Neither follows the task. exec-server, in the server's pipe, reads the
// task answer itself on both, so the outcome is the same on both: the job
// is not done and not retried, the journal has one task-lost line with the
// task's id and the call's tool_use_id, the report says which task was
// left running, and the call is no side effect that succeeded.
func TestNightTaskLeftRunning(t *testing.T) { testkit.ForEachClaude(t, testNightTaskLeftRunning) }

func testNightTaskLeftRunning(t *testing.T, version string) {
	f := newNightFixture(t)
	server := testkit.BuildTestServer(t)
	b := f.load(fmt.Sprintf(`version: 1
name: tasks
state_dir: ./state
max_parallel: 1
agent: {command: %s}
defaults: {timeout: 3m, stall_timeout: 2m, retries: 2}
health: {ttl: 10m, probe_timeout: 5s, prewarm_timeout: 20s}
servers:
  slowjobs: {command: %s, args: [--mode, answer-task]}
jobs:
  - {name: tasked, servers: [slowjobs], prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(server),
		jsonString(prompt("tasked", `mcp__slowjobs__echo {"message":"start the export"}`))))
	s := f.run(b)
	j := s.Jobs[0]
	results := f.api.SessionToolResults("tasked")
	if len(results) == 0 {
		t.Fatalf("the call was not made: %+v", j)
	}

	// What the CLI made of the answer (the measurement; the outcome below
	// does not depend on it).
	if version == "2.1.197" {
		if r := results[0]; r.IsError || !strings.Contains(r.Content, "completed with no output") {
			t.Errorf("the call's result: %+v, want 2.1.197's empty success", r)
		}
	} else if r := results[0]; !r.IsError || !strings.Contains(r.Content, "Unsupported result type 'task'") {
		t.Errorf("the call's result: %+v, want the CLI's task failure", r)
	}
	t.Logf("%s: the task answer reached the model as %q; the job ended %s: %s", version, results[0].Content, j.Status, j.Reason)

	if j.Status == StatusDone || j.Attempts != 1 || !strings.Contains(j.Reason, "task was left running on slowjobs") ||
		!strings.Contains(j.Reason, "task "+mcpserver.TaskID) {
		t.Errorf("tasked: %s after %d attempts (%s); want not done, once, saying task %s was left running on slowjobs",
			j.Status, j.Attempts, j.Reason, mcpserver.TaskID)
	}
	var lost int
	for _, ev := range readJournalTypes(t, s.Journal) {
		if ev.Type == journal.SideEffect {
			t.Errorf("a call that became a task counted as a side effect that succeeded: %+v", ev)
		}
		if ev.Type != journal.TaskLost {
			continue
		}
		lost++
		if ev.Job != "tasked" || ev.Server != "slowjobs" || ev.Tool != "mcp__slowjobs__echo" || ev.Task != mcpserver.TaskID ||
			!strings.HasPrefix(ev.ToolUseID, "toolu_") {
			t.Errorf("task-lost %+v, want job tasked, server slowjobs, tool mcp__slowjobs__echo, task %s and the call's tool_use_id", ev, mcpserver.TaskID)
		}
	}
	if lost != 1 {
		t.Errorf("%d task-lost lines, want 1", lost)
	}
	night, err := report.Build(s.Journal, "")
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := night.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "task left running by mcp__slowjobs__echo") || !strings.Contains(md.String(), `MCP task "`+mcpserver.TaskID+`"`) {
		t.Errorf("the report does not say the task is outstanding:\n%s", md.String())
	}
}
