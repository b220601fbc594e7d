package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/report"
)

// TestNightSideEffectsOnce is issue 20's "no side effect twice", through
// the real CLI on every supported version. Each job's first attempt
// records a line (a tool without annotations: a side effect) and peeks at
// the file (readOnlyHint), then its verify fails once, so a fresh retry
// makes the same two calls:
//   - once (the default): the retry's prompt names the earlier call, the
//     repeated record is denied with a reason, the peek runs again; the
//     line is in the file once, the journal has one side-effect line;
//   - repeat (side_effects: allow-repeat): both records run.
func TestNightSideEffectsOnce(t *testing.T) { testkit.ForEachClaude(t, testNightSideEffectsOnce) }

func testNightSideEffectsOnce(t *testing.T, version string) {
	f := newNightFixture(t)
	server := testkit.BuildTestServer(t)
	failOnce := func(name string) string {
		p := filepath.Join(f.dir, name+".sh")
		marker := filepath.Join(f.dir, name+".checked")
		body := fmt.Sprintf("#!/bin/sh\nif [ ! -e %[1]s ]; then touch %[1]s; echo 'not yet'; exit 1; fi\necho ok\n", marker)
		if err := os.WriteFile(p, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	onceFile, repeatFile := filepath.Join(f.dir, "once.txt"), filepath.Join(f.dir, "repeat.txt")
	calls := func(file, line string) []string {
		return []string{
			fmt.Sprintf(`mcp__files__record {"text":%s,"file":%s}`, jsonString(line), jsonString(file)),
			fmt.Sprintf(`mcp__files__peek {"file":%s}`, jsonString(file)),
		}
	}
	b := f.load(fmt.Sprintf(`version: 1
name: effects
state_dir: ./state
max_parallel: 1
agent: {command: %s}
defaults: {timeout: 3m, stall_timeout: 2m, retries: 1}
health: {ttl: 10m, probe_timeout: 5s, prewarm_timeout: 20s}
servers:
  files: {command: %s}
jobs:
  - {name: once, servers: [files], verify: [%s], prompt: %s}
  - {name: repeat, servers: [files], side_effects: allow-repeat, verify: [%s], prompt: %s}
`, jsonString(testkit.ClaudeBinOf(t, version)), jsonString(server),
		jsonString(failOnce("once")), jsonString(prompt("once", calls(onceFile, "ordered once")...)),
		jsonString(failOnce("repeat")), jsonString(prompt("repeat", calls(repeatFile, "ordered twice")...))))

	s := f.run(b)
	for _, j := range s.Jobs {
		if j.Status != StatusDone || j.Attempts != 2 {
			t.Errorf("%s: %s after %d attempts (%s), want done on the second", j.Name, j.Status, j.Attempts, j.Reason)
		}
	}

	if got, _ := os.ReadFile(onceFile); string(got) != "ordered once\n" {
		t.Errorf("once: the file holds %q, want the line once", got)
	}
	if got, _ := os.ReadFile(repeatFile); string(got) != "ordered twice\nordered twice\n" {
		t.Errorf("repeat: the file holds %q, want the line twice (allow-repeat)", got)
	}

	testkit.WantSideEffectOnce(t, f.api, "once")

	effectsOf := map[string][]journal.Event{}
	for _, ev := range readJournalTypes(t, s.Journal) {
		if ev.Type == journal.SideEffect {
			effectsOf[ev.Job] = append(effectsOf[ev.Job], ev)
		}
	}
	if es := effectsOf["once"]; len(es) != 1 || es[0].Tool != "mcp__files__record" || es[0].Attempt != 1 || es[0].Effect != 1 {
		t.Errorf("once: side-effect lines %+v, want the record of attempt 1 once", es)
	}
	if es := effectsOf["repeat"]; len(es) != 2 || es[0].Attempt != 1 || es[1].Attempt != 2 {
		t.Errorf("repeat: side-effect lines %+v, want one per attempt", es)
	}

	l, err := effects.Read(statedir.Effects(b.StateDir, s.RunID, "once"))
	if err != nil || !l.ReadOnly("files", "peek") || l.ReadOnly("files", "record") {
		t.Errorf("the ledger's hints: %+v, %v; want peek read-only (its readOnlyHint), record not", l, err)
	}

	night, err := report.Build(s.Journal, "")
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := night.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), `side effects: mcp__files__record {"file":`) {
		t.Errorf("the report does not list the side effects:\n%s", md.String())
	}
}
