package report

import (
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// TestNextSteps: each kind of trouble gets its cause from the journal's
// fields and its own fix; a job with none gets no step; the re-run takes
// the jobs worth running again.
func TestNextSteps(t *testing.T) {
	at := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)
	outage := Server{Name: "notes", Outages: []Outage{{From: at, Reason: "transport: connection refused"}},
		Reconnect: "restart-notes.sh exited 1: could not bind :8123"}
	batch := &jobs.Batch{File: "/home/op/night.yaml", MaxCostUSD: 1,
		Jobs:    []*jobs.Job{{Name: "b", Needs: []string{"a"}, Servers: []string{"notes"}}, {Name: "w", Servers: []string{"notes"}}},
		Servers: []*jobs.Server{{Name: "notes"}}}
	for _, tc := range []struct {
		name     string
		night    Night
		batch    *jobs.Batch
		status   string // "" for no step
		cause    []string
		fix      []string
		command  string
		rerun    bool
		notRerun bool
	}{
		{name: "done", night: Night{Finished: true, Jobs: []Job{{Name: "a", Status: "done"}}}},
		{name: "login refused", night: Night{Finished: true, Jobs: []Job{{Name: "a", Status: "failed", Class: "invalid-credentials", Reason: "Invalid API key"}}},
			status: "failed", cause: []string{"login was refused", "Invalid API key"}, fix: []string{"claude /login"}, command: "nightwatch doctor night.yaml", rerun: true},
		{name: "skipped after the night stopped", night: Night{Finished: true, Stopped: "the agent's login was refused", Jobs: []Job{{Name: "a", Status: "skipped", Reason: "the night stopped"}}},
			status: "skipped", cause: []string{"login was refused"}, rerun: true},
		{name: "usage limit", night: Night{Finished: true, Jobs: []Job{{Name: "a", Status: "failed", Class: "usage-limit", Reason: "resets 5am"}}},
			status: "failed", cause: []string{"usage-limit: resets 5am"}, fix: []string{"wait for the limit to reset"}, rerun: true},
		{name: "own budget", night: Night{Finished: true, Jobs: []Job{{Name: "a", Status: "failed", Reason: "budget exceeded: 9 turns of max_turns 8",
			Budget: &journal.Budget{Limit: journal.BudgetMaxTurns, Max: 8, Spent: 9, By: "nightwatch"}}}},
			status: "failed", cause: []string{"own budget stopped it", "9 turns"}, fix: []string{"raise the job's max_turns (now 8)"}, rerun: true},
		{name: "denied", night: Night{Finished: true, Jobs: []Job{{Name: "a", Status: "failed", Denied: []string{"mcp__notes__write"}}}},
			status: "failed", cause: []string{"denied mcp__notes__write"}, fix: []string{"allowed_tools:"}, command: "nightwatch run --dry-run night.yaml", rerun: true},
		{name: "verify failed", night: Night{Finished: true, Jobs: []Job{{Name: "a", Status: "failed",
			Verify: &journal.Verify{Command: []string{"./check.sh", "a b"}, ExitCode: 2, Output: "FAIL TestX"}}}},
			status: "failed", cause: []string{"verify (./check.sh a b) exited 2: FAIL TestX"}, fix: []string{"fix the verify script"}, command: "./check.sh 'a b'", rerun: true},
		{name: "verify did not start", night: Night{Finished: true, Jobs: []Job{{Name: "a", Status: "failed",
			Verify: &journal.Verify{Command: []string{"./nope.sh"}, ExitCode: -1, Err: "no such file"}}}},
			status: "failed", cause: []string{"did not run: no such file"}, fix: []string{"relative path is taken from the batch file's folder"}, rerun: true},
		{name: "task left running", night: Night{Finished: true, Jobs: []Job{{Name: "a", Status: "failed", TasksLost: []SideEffect{{Tool: "mcp__jobs__start", Attempt: 1}}}}},
			status: "failed", cause: []string{"mcp__jobs__start", "still be running"}, notRerun: true},
		{name: "deferred until skipped: the server, its outage and its reconnect's words, whole", batch: batch,
			night: Night{Finished: true, Servers: []Server{outage, {Name: "other", Outages: []Outage{{From: at}}}},
				Jobs: []Job{{Name: "w", Status: "skipped", Reason: "waited 1h0m0s for its servers", Deferrals: []Deferral{{At: at.Add(time.Minute)}}}}},
			status: "skipped", cause: []string{"notes was down (transport: connection refused); its reconnect said: restart-notes.sh exited 1: could not bind :8123", "waited 1h0m0s"},
			fix: []string{"bring notes back"}, command: "nightwatch probe /home/op/night.yaml notes", rerun: true},
		{name: "session could not use a server", night: Night{Finished: true, Jobs: []Job{{Name: "a", Status: "failed", Unusable: []string{"notes"}}}},
			status: "failed", cause: []string{"notes was down"}, fix: []string{"give notes a reconnect:"}, command: "nightwatch probe night.yaml notes", rerun: true},
		{name: "skipped: its need failed", batch: batch, night: Night{Finished: true, Jobs: []Job{{Name: "a", Status: "failed", Reason: "exit 1"}, {Name: "b", Status: "skipped", Reason: "it needs a, which failed"}}},
			status: "skipped", cause: []string{"it needs a, which failed"}, fix: []string{"fix a first"}, rerun: true},
		{name: "skipped: the night's budget", batch: &jobs.Batch{File: "/n.yaml", MaxCostUSD: 1}, night: Night{Finished: true, Totals: Totals{CostUSD: 1.2},
			Jobs: []Job{{Name: "b", Status: "skipped", Reason: "max_cost_usd reached"}}},
			status: "skipped", fix: []string{"raise the batch's max_cost_usd (now $1.00; the night spent $1.20)"}, rerun: true},
		{name: "ran without its server", night: Night{Finished: true, Jobs: []Job{{Name: "a", Status: "done", RanWithout: []string{"notes"}}}},
			status: StatusUnverified, cause: []string{"ran without notes"}, command: "nightwatch probe night.yaml notes", rerun: true},
		{name: "the night is still running", night: Night{Jobs: []Job{{Name: "a", Status: StatusUnfinished}}},
			status: StatusUnfinished, command: "nightwatch run night.yaml", notRerun: true},
		{name: "the night was closed", night: Night{Finished: true, Closed: "its window passed", Jobs: []Job{{Name: "a", Status: StatusUnfinished}}},
			status: StatusUnfinished, cause: []string{"closed before it ended: its window passed"}, rerun: true},
		{name: "a crash: read what it said", night: Night{Finished: true, Jobs: []Job{{Name: "a", Status: "failed", Reason: "exit 1: boom",
			Folder: "/s/runs/r/a/attempt-2", FinalMessage: "/s/runs/r/a/attempt-2/final.md", tries: []attempt{{n: 1}, {n: 2}}}}},
			status: "failed", cause: []string{"exit 1: boom (2 attempts)"}, fix: []string{"/s/runs/r/a/attempt-2/final.md", "/s/runs/r/a/attempt-2/stderr.log"}, rerun: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.night
			n.RunID = "r1"
			if tc.batch != nil {
				n.Advise(tc.batch)
			} else {
				n.next()
			}
			var s *Step
			for i := range n.Next {
				if n.Next[i].Job == n.Jobs[len(n.Jobs)-1].Name {
					s = &n.Next[i]
				}
			}
			if tc.status == "" {
				if s != nil || n.Rerun != "" {
					t.Fatalf("a step for a job that needs none: %+v, rerun %q", s, n.Rerun)
				}
				return
			}
			if s == nil {
				t.Fatalf("no step; Next = %+v", n.Next)
			}
			if s.Status != tc.status {
				t.Errorf("status %q, want %q", s.Status, tc.status)
			}
			for _, w := range tc.cause {
				if !strings.Contains(s.Cause, w) {
					t.Errorf("cause %q lacks %q", s.Cause, w)
				}
			}
			for _, w := range tc.fix {
				if !strings.Contains(s.Fix, w) {
					t.Errorf("fix %q lacks %q", s.Fix, w)
				}
			}
			if tc.command != "" && s.Command != tc.command {
				t.Errorf("command %q, want %q", s.Command, tc.command)
			}
			if tc.rerun && (!s.Rerun || !strings.Contains(n.Rerun, "nightwatch rerun ") || !strings.HasSuffix(n.Rerun, " --run r1")) {
				t.Errorf("rerun %v, command %q; want it re-run", s.Rerun, n.Rerun)
			}
			if tc.notRerun && s.Rerun {
				t.Errorf("re-run, but running it again would repeat or race what is left")
			}
		})
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"/home/op/night.yaml": "/home/op/night.yaml",
		"/home/op/my night":   "'/home/op/my night'",
		"it's":                `'it'\''s'`,
		"":                    "''",
		"$(rm -rf ~)":         "'$(rm -rf ~)'",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
