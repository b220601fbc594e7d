package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/launch"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

// TestRestartBoundsRealClaude: a stdio server's restart: block reaches the
// exec-server of a real session, on every supported CLI version. The same
// two calls (die, then echo) with the default bounds: exec-server restarts
// the server under the CLI (server-restarted) and the die gets the restart
// error; with restart: {max: 0}: the first loss is final (server-lost,
// exec-server exits) and the die gets the loss. Either way the die's call
// counts as lost with its server (the job is not done), and the echo is
// answered: both CLIs start a stdio server whose process exited again at
// its next call (a new exec-server, not a repair of nightwatch's).
func TestRestartBoundsRealClaude(t *testing.T) { testkit.ForEachClaude(t, testRestartBoundsRealClaude) }

func testRestartBoundsRealClaude(t *testing.T, version string) {
	claude := testkit.ClaudeBinOf(t, version)
	server := testkit.BuildTestServer(t)
	binary := testkit.BuildNightwatch(t)
	api := fakeapi.Start(t)
	zero := 0
	tests := []struct {
		name   string
		bounds launch.Bounds
		says   string // in the die's error
		kind   string // the event exec-server writes for the die
	}{
		{"default", launch.Bounds{}, healthcheck.GuardRestarted, healthcheck.EventServerRestarted},
		{"never restarted", launch.Bounds{Restarts: &zero}, "restarted 0 times", healthcheck.EventServerLost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			session := "rb-" + strings.ReplaceAll(tt.name, " ", "-") + "-" + version
			srv := sessionTestStdio("notes", server)
			srv.Restart = tt.bounds
			b := sessionTestBatch(t, srv)
			b.Agent.Command = claude
			job := sessionTestJob("bounds", "SESSION "+session+"\n"+
				`CALL mcp__notes__die {}`+"\n"+`CALL mcp__notes__echo {"message":"after the die"}`, "notes")
			job.Cwd = t.TempDir()
			spec := sessionTestSpec(b, job, sessionTestClaudeEnv(t, api)...)
			spec.Binary = binary
			out, f, _ := sessionTestRun(t, context.Background(), spec)
			// The die's call was lost with its server either way: the job
			// is not done (healthcheck's classifier reads both errors).
			if out.Status != Failed || !strings.Contains(out.Reason, "lost with its server notes") {
				t.Errorf("outcome %s %q, want failed: the die's call lost with notes", out.Status, out.Reason)
			}
			got := api.SessionToolResults(session)
			if len(got) != 2 || !got[0].IsError || !strings.Contains(got[0].Content, tt.says) {
				t.Fatalf("the model saw %+v, want the die's error saying %q and the echo's result", got, tt.says)
			}
			if got[1].IsError || !strings.Contains(got[1].Content, "after the die") {
				t.Errorf("echo after the die: %+v, want answered", got[1])
			}
			tail := healthcheck.EventTail{Path: f.Events}
			var kinds []string
			for _, ev := range tail.Next() {
				if ev.Server == "notes" && strings.HasPrefix(ev.Kind, "server-") {
					kinds = append(kinds, ev.Kind)
				}
			}
			if !strings.Contains(strings.Join(kinds, " "), tt.kind) {
				t.Errorf("exec-server's events %q, want %s", kinds, tt.kind)
			}
		})
	}
}

// TestInterruptedWordingRealClaude: what the model reads of a call lost
// with its server depends on the tool's idempotentHint, in the job's
// side-effect ledger, on every supported CLI version: exec-server's
// restart error and the hook's added context both say an idempotent
// tool's call "can be made again", and another's "may have taken effect:
// check before repeating it" (effects.Hints.Interrupted, their one
// wording).
func TestInterruptedWordingRealClaude(t *testing.T) {
	testkit.ForEachClaude(t, testInterruptedWordingRealClaude)
}

func testInterruptedWordingRealClaude(t *testing.T, version string) {
	claude := testkit.ClaudeBinOf(t, version)
	server := testkit.BuildTestServer(t)
	binary := testkit.BuildNightwatch(t)
	api := fakeapi.Start(t)
	yes := true
	tests := []struct {
		name  string
		hints map[string]effects.Hints // of notes' tools
		want  string
	}{
		{"idempotent", map[string]effects.Hints{"die": {Idempotent: &yes}}, "the call can be made again"},
		{"no hints", nil, "it may have taken effect: check before repeating it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			session := "iw-" + strings.ReplaceAll(tt.name, " ", "-") + "-" + version
			b := sessionTestBatch(t, sessionTestStdio("notes", server))
			b.Agent.Command = claude
			job := sessionTestJob("wording", "SESSION "+session+"\n"+`CALL mcp__notes__die {}`, "notes")
			job.Cwd = t.TempDir()
			spec := sessionTestSpec(b, job, sessionTestClaudeEnv(t, api)...)
			spec.Binary = binary
			ledger := statedir.Effects(b.StateDir, spec.RunID, job.Name)
			if err := os.MkdirAll(filepath.Dir(ledger), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := effects.Prepare(ledger, map[string]map[string]effects.Hints{"notes": tt.hints}, false); err != nil {
				t.Fatal(err)
			}
			sessionTestRun(t, context.Background(), spec)
			got := api.SessionToolResults(session)
			if len(got) != 1 || !got[0].IsError || !strings.Contains(got[0].Content, healthcheck.GuardRestarted) ||
				!strings.HasSuffix(got[0].Content, tt.want+".") {
				t.Fatalf("the model saw %+v, want the restart error ending %q", got, tt.want)
			}
			if !slices.ContainsFunc(got[0].HookContext, func(s string) bool {
				return strings.Contains(s, "went down during this call") && strings.Contains(s, "This call did not complete: "+tt.want+".")
			}) {
				t.Errorf("the hook's context %q, want the repair line saying %q", got[0].HookContext, tt.want)
			}
		})
	}
}

// TestBackAsNewProcessRealClaude: after exec-server restarted a stdio
// server under the session, the next call is held until the server
// answers a probe, and the line the model reads then says that a new
// process answered and how (from exec-server's events in the night's
// events file), not "if it restarted", on every supported CLI version.
func TestBackAsNewProcessRealClaude(t *testing.T) {
	testkit.ForEachClaude(t, testBackAsNewProcessRealClaude)
}

func testBackAsNewProcessRealClaude(t *testing.T, version string) {
	claude := testkit.ClaudeBinOf(t, version)
	server := testkit.BuildTestServer(t)
	binary := testkit.BuildNightwatch(t)
	api := fakeapi.Start(t)
	session := "bp-" + version
	b := sessionTestBatch(t, sessionTestStdio("notes", server))
	b.Agent.Command = claude
	job := sessionTestJob("back", "SESSION "+session+"\n"+`CALL mcp__notes__die {"code":4}`+"\n"+`CALL mcp__notes__echo {"message":"again"}`, "notes")
	job.Cwd = t.TempDir()
	spec := sessionTestSpec(b, job, sessionTestClaudeEnv(t, api)...)
	spec.Binary = binary
	sessionTestRun(t, context.Background(), spec)
	got := api.SessionToolResults(session)
	if len(got) != 2 || !got[0].IsError || got[1].IsError || !strings.Contains(got[1].Content, "again") {
		t.Fatalf("the model saw %+v, want the die's restart error and the echo's answer", got)
	}
	const want = `it is back as a new process (nightwatch restarted it after it exited with code 4)`
	if !slices.ContainsFunc(got[1].HookContext, func(s string) bool { return strings.Contains(s, want) }) {
		t.Errorf("the held call's context %q, want %q", got[1].HookContext, want)
	}
}
