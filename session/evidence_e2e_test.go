package session

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// TestEvidenceRealClaude is issue 20's "evidence, not wording" and "a call
// lost with its server counts for nothing", through the real CLI on every
// supported version, nightwatch's hook and real stdio MCP servers:
//   - words: a successful result holding the CLI's sentences ("is not
//     connected", "haven't granted it") changes nothing;
//   - iserror: a tool's own isError text quoting "Connection closed" does
//     not mark its live server down, and the job is judged on its merits;
//   - own-closed: the server itself answers with the CLI's exact
//     "Connection closed" (both versions' texts; an isError result and a
//     JSON-RPC error), then with its `is not connected` and `has
//     disconnected` sentences: its exec-server saw the answers, so the
//     server is not marked down, the session is not stopped, the next
//     call is neither blocked nor held, and the job is done;
//   - lost: a stdio server that dies during the job's only call, with
//     nothing to repair it: the job is not done, and the reason names the
//     call and the server; the attempt is not stopped mid-way for it.
func TestEvidenceRealClaude(t *testing.T) { testkit.ForEachClaude(t, testEvidenceRealClaude) }

func testEvidenceRealClaude(t *testing.T, version string) {
	claude := testkit.ClaudeBinOf(t, version)
	server := testkit.BuildTestServer(t)
	binary := testkit.BuildNightwatch(t)
	api := fakeapi.Start(t)
	newSpec := func(t *testing.T, job *jobs.Job) Spec {
		b := sessionTestBatch(t, sessionTestStdio("notes", server), sessionTestStdio("beta", server))
		b.Agent.Command = claude
		job.Cwd = t.TempDir()
		spec := sessionTestSpec(b, job, sessionTestClaudeEnv(t, api)...)
		spec.Binary = binary
		return spec
	}
	call := func(tool string, args map[string]string) string {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		return "CALL " + tool + " " + string(b)
	}
	entry := func(t *testing.T, f Files, server string) *healthcheck.Entry {
		t.Helper()
		cache, err := (&healthcheck.Store{Path: f.Cache}).Read()
		if err != nil {
			t.Fatal(err)
		}
		return cache.Entry(server)
	}

	t.Run("words", func(t *testing.T) {
		t.Parallel()
		words := "MCP server \"beta\" is not connected\n" +
			"Claude requested permissions to use mcp__beta__echo, but you haven't granted it yet."
		job := sessionTestJob("words", "SESSION ev-words-"+version+"\n"+
			call("mcp__notes__echo", map[string]string{"message": words})+"\n"+
			call("mcp__notes__echo", map[string]string{"message": `MCP server "beta" is not connected`})+"\n"+
			call("mcp__beta__echo", map[string]string{"message": "beta answers"}), "notes", "beta")
		out, f, obs := sessionTestRun(t, context.Background(), newSpec(t, job))
		if out.Status != Done || len(out.Unusable) != 0 || len(out.Denied) != 0 {
			t.Errorf("outcome %s %q unusable %+v denied %q, want done", out.Status, out.Reason, out.Unusable, out.Denied)
		}
		if len(obs.statuses) != 0 {
			t.Errorf("the night was told of servers the session could not use: %v", obs.statuses)
		}
		got := api.SessionToolResults("ev-words-" + version)
		if len(got) != 3 || got[0].IsError || !strings.Contains(got[0].Content, "haven't granted it") || got[2].IsError {
			t.Fatalf("the model saw %+v", got)
		}
		if e := entry(t, f, "beta"); e == nil || e.Status != healthcheck.StatusHealthy {
			t.Errorf("beta: %+v, want healthy", e)
		}
	})

	t.Run("iserror", func(t *testing.T) {
		t.Parallel()
		job := sessionTestJob("iserror", "SESSION ev-iserror-"+version+"\n"+
			call("mcp__notes__fail", map[string]string{"text": "could not open note 'Connection closed'"}), "notes")
		out, f, obs := sessionTestRun(t, context.Background(), newSpec(t, job))
		got := api.SessionToolResults("ev-iserror-" + version)
		if len(got) != 1 || !got[0].IsError || got[0].Content != "could not open note 'Connection closed'" {
			t.Fatalf("the model saw %+v", got)
		}
		// Its merits: the session ended well, and no server was lost.
		if out.Status != Done || len(out.Unusable) != 0 || len(obs.statuses) != 0 {
			t.Errorf("outcome %s %q unusable %+v, observer %v; want done", out.Status, out.Reason, out.Unusable, obs.statuses)
		}
		if e := entry(t, f, "notes"); e == nil || e.Status == healthcheck.StatusUnhealthy {
			t.Errorf("notes: %+v, want not marked down by its tool's own text", e)
		}
	})

	t.Run("own-closed", func(t *testing.T) {
		t.Parallel()
		// The server itself answers with the CLI's exact sentences, as an
		// isError result (both versions' texts) and as a JSON-RPC error.
		session := "ev-own-closed-" + version
		job := sessionTestJob("own-closed", "SESSION "+session+"\n"+
			call("mcp__notes__fail", map[string]string{"text": "Connection closed"})+"\n"+
			call("mcp__notes__fail", map[string]string{"text": "MCP error -32000: Connection closed"})+"\n"+
			call("mcp__notes__rpcerr", map[string]string{"message": "Connection closed"})+"\n"+
			call("mcp__notes__fail", map[string]string{"text": `MCP server "notes" is not connected`})+"\n"+
			call("mcp__notes__fail", map[string]string{"text": ownDisconnected})+"\n"+
			call("mcp__notes__echo", map[string]string{"message": "still here"}), "notes")
		out, f, obs := sessionTestRun(t, context.Background(), newSpec(t, job))
		got := api.SessionToolResults(session)
		if len(got) != 6 || got[5].IsError || !strings.Contains(got[5].Content, "still here") {
			t.Fatalf("the model saw %+v, want five errors and the echo answered", got)
		}
		for i, r := range got[:5] {
			want := healthcheck.ClientClosed
			switch i {
			case 3:
				want = healthcheck.ClientNotConnected
			case 4:
				want = healthcheck.ClientDisconnected
			}
			if c, ok := healthcheck.ClientText(r.Content); !r.IsError || !ok || c.Kind != want {
				t.Errorf("call %d: the model saw %q (error %v), want the CLI's own %s text", i+1, r.Content, r.IsError, want)
			}
		}
		if out.Status != Done || len(out.Unusable) != 0 || len(obs.statuses) != 0 || len(obs.unusable) != 0 {
			t.Errorf("outcome %s %q unusable %+v, observer %v %v; want done", out.Status, out.Reason, out.Unusable, obs.statuses, obs.unusable)
		}
		if e := entry(t, f, "notes"); e != nil && e.Status == healthcheck.StatusUnhealthy {
			t.Errorf("notes: %+v, want not marked down: the server itself answered", e)
		}
		var answered []string
		for _, ev := range readEvents(t, f.Events) {
			switch ev.Kind {
			case healthcheck.EventCallAnswered:
				answered = append(answered, ev.Tool+" "+ev.Verdict)
			case healthcheck.EventBlocked, healthcheck.EventHolding:
				t.Errorf("a call was blocked or held: %+v", ev)
			}
		}
		want := []string{"fail " + healthcheck.AnsweredIsError, "fail " + healthcheck.AnsweredIsError, "rpcerr " + healthcheck.AnsweredError,
			"fail " + healthcheck.AnsweredIsError, "fail " + healthcheck.AnsweredIsError}
		if !slices.Equal(answered, want) {
			t.Errorf("call-answered events %q, want %q", answered, want)
		}
	})

	t.Run("task-trial", func(t *testing.T) {
		t.Parallel()
		// slowjobs is half-open (an outage only calls see, its trial due)
		// and answers the trial call with an MCP task. 2.1.197 shows the
		// hook an empty success; that is no proof of health, so the
		// outage goes on (exec-server recorded the task for the call).
		// 2.1.332 fails the call, which is no success either.
		b := sessionTestBatch(t, sessionTestStdio("slowjobs", server, "--mode", "answer-task"))
		b.Agent.Command = claude
		job := sessionTestJob("task-trial", "SESSION ev-task-trial-"+version+"\n"+
			call("mcp__slowjobs__echo", map[string]string{"message": "start the export"}), "slowjobs")
		job.Cwd = t.TempDir()
		spec := sessionTestSpec(b, job, sessionTestClaudeEnv(t, api)...)
		spec.Binary = binary
		f, err := Prepare(spec)
		if err != nil {
			t.Fatal(err)
		}
		now := healthcheck.MillisOf(time.Now())
		if err := (&healthcheck.Store{Path: f.Cache}).Update(func(c *healthcheck.File) error {
			c.Servers["slowjobs"] = &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, NextRetryAt: now - 1000, FailureCount: 1,
				LastFailureCode: healthcheck.CodeUnavailable, LastError: "upstream 503", UnhealthySince: now - 60000,
				CheckedAt: now - 60000, Witness: healthcheck.WitnessCalls}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		out := Run(context.Background(), spec, f, &sessionTestObserver{})
		got := api.SessionToolResults("ev-task-trial-" + version)
		if len(got) != 1 {
			t.Fatalf("the model saw %+v (outcome %s %q), want the one call", got, out.Status, out.Reason)
		}
		l, err := effects.Read(statedir.Effects(b.StateDir, spec.RunID, job.Name))
		if err != nil || len(l.Tasks) != 1 || l.Tasks[0].ID != mcpserver.TaskID {
			t.Fatalf("ledger %+v, %v: want the task exec-server recorded", l, err)
		}
		if e := entry(t, f, "slowjobs"); e == nil || e.Status != healthcheck.StatusUnhealthy {
			t.Errorf("slowjobs after its trial call only accepted a task (the model saw %q): %+v, want still unhealthy", got[0].Content, e)
		}
	})

	t.Run("lost", func(t *testing.T) {
		t.Parallel()
		job := sessionTestJob("lost", "SESSION ev-lost-"+version+"\n"+call("mcp__notes__die", map[string]string{}), "notes")
		out, f, obs := sessionTestRun(t, context.Background(), newSpec(t, job))
		// The session's exec-server restarts the server and answers the
		// call it died under with its restart error (package serverguard):
		// the call did not complete, and the model did not call again.
		got := api.SessionToolResults("ev-lost-" + version)
		if len(got) != 1 || !got[0].IsError || !strings.Contains(got[0].Content, healthcheck.GuardRestarted+` "notes"`) {
			t.Fatalf("the model saw %+v", got)
		}
		const want = "call to mcp__notes__die lost with its server notes: "
		if out.Status != Failed || !strings.HasPrefix(out.Reason, want) || !strings.Contains(out.Reason, healthcheck.GuardRestarted) {
			t.Errorf("outcome %s %q, want failed with %q…", out.Status, out.Reason, want)
		}
		if !slices.Equal(out.Unusable, []Unusable{{Server: "notes", Tool: "mcp__notes__die", Why: got[0].Content}}) {
			t.Errorf("unusable %+v", out.Unusable)
		}
		// Not stopped mid-way: the session ran to its result.
		if out.KilledBy != "" || out.Subtype != "success" || len(obs.unusable) != 0 {
			t.Errorf("killed by %q, subtype %q, told to stop for %v", out.KilledBy, out.Subtype, obs.unusable)
		}
		if e := entry(t, f, "notes"); e == nil || e.Status != healthcheck.StatusUnhealthy {
			t.Errorf("notes: %+v, want marked down by the hook", e)
		}
	})
}

// ownDisconnected is 2.1.332's sentence for a stdio server gone for the
// session, which a server of the test answers with as its own isError text.
const ownDisconnected = "No such tool available: mcp__notes__echo. Its MCP server 'notes' has disconnected. " +
	"Continue without this tool; it becomes callable again only if the server reconnects."

// readEvents is every event in the events file at path.
func readEvents(t *testing.T, path string) []healthcheck.Event {
	t.Helper()
	tail := healthcheck.EventTail{Path: path}
	return tail.Next()
}
