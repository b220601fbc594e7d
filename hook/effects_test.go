package hook

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/hook/hot"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
)

// The hook's half of the side-effect ledger, in-process: a call that
// succeeded in attempt 1 is recorded (unless read-only), its exact repeat
// in attempt 2 is denied with the reason, whatever the input's key order;
// another input, a read-only tool and the same attempt go ahead; outside a
// ledger nothing is read or written.
func TestHookSideEffects(t *testing.T) {
	home := t.TempDir()
	ledger := filepath.Join(home, "run", "job", effects.FileName)
	yes := true
	if err := effects.Prepare(ledger, map[string]map[string]effects.Hints{"notes": {"read": {ReadOnly: &yes}}}, false); err != nil {
		t.Fatal(err)
	}
	env := func(attempt string) map[string]string {
		return map[string]string{"HOME": home, "NIGHTWATCH_STATE_PATH": filepath.Join(home, "cache.json"),
			effects.PathEnv: ledger, effects.AttemptEnv: attempt}
	}
	call := func(event, tool, input string) string {
		return `{"session_id":"s1","cwd":"/nonexistent","hook_event_name":"` + event + `","tool_name":"` + tool +
			`","tool_input":` + input + `,"mcp_server":{"name":"notes","source":"dynamic"},"tool_response":[]}`
	}
	for _, c := range []struct{ tool, input string }{
		{"mcp__notes__create", `{"title":"a","body":"b"}`},
		{"mcp__notes__read", `{"title":"a"}`},
	} {
		if r := invoke(t, call("PostToolUse", c.tool, c.input), env("1")); r.code != ExitAllow {
			t.Fatalf("PostToolUse: %+v", r)
		}
	}
	l, err := effects.Read(ledger)
	if err != nil || len(l.Calls) != 1 || l.Calls[0].Tool != "create" || l.Calls[0].Attempt != 1 {
		t.Fatalf("ledger after attempt 1: %+v, %v; want the create only", l, err)
	}

	r := invoke(t, call("PreToolUse", "mcp__notes__create", `{ "body":"b", "title":"a" }`), env("2"))
	if r.code != ExitBlock || !strings.Contains(r.stdout, `"permissionDecision":"deny"`) ||
		!strings.Contains(r.stdout, "already succeeded in attempt 1") {
		t.Errorf("the repeat in attempt 2: %+v, want denied with the reason", r)
	}
	for _, c := range []struct{ name, tool, input, attempt string }{
		{"another input", "mcp__notes__create", `{"title":"a","body":"c"}`, "2"},
		{"read-only", "mcp__notes__read", `{"title":"a"}`, "2"},
		{"the same attempt", "mcp__notes__create", `{"title":"a","body":"b"}`, "1"},
	} {
		if r := invoke(t, call("PreToolUse", c.tool, c.input), env(c.attempt)); r.code != ExitAllow || strings.Contains(r.stdout, "deny") {
			t.Errorf("%s: %+v, want allowed", c.name, r)
		}
	}
	noLedger := env("2")
	delete(noLedger, effects.PathEnv)
	if r := invoke(t, call("PreToolUse", "mcp__notes__create", `{"title":"a","body":"b"}`), noLedger); r.code != ExitAllow {
		t.Errorf("without a ledger: %+v, want allowed", r)
	}
}

// TestHookTaskCallIsNoSideEffect: on 2.1.197 a call whose stdio server
// answered with an MCP task reaches PostToolUse as an empty success; the
// ledger already has that task (exec-server recorded it under the call's
// tool_use_id), so the call is not recorded as a side effect that
// succeeded. The same tool's other call is. And 2.1.332's failure of the
// task call adds no second task.
func TestHookTaskCallIsNoSideEffect(t *testing.T) {
	home := t.TempDir()
	ledger := filepath.Join(home, "run", "job", effects.FileName)
	if err := effects.RecordTask(ledger, 1, "slowjobs", "echo", effects.TaskRef{ID: "t-1", ToolUseID: "toolu_task"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "NIGHTWATCH_STATE_PATH": filepath.Join(home, "cache.json"),
		effects.PathEnv: ledger, effects.AttemptEnv: "1"}
	payload := func(event, id, extra string) string {
		return `{"session_id":"s1","cwd":"/nonexistent","hook_event_name":"` + event + `","tool_name":"mcp__slowjobs__echo","tool_use_id":"` + id +
			`","tool_input":{"message":"start"},"mcp_server":{"name":"slowjobs","source":"dynamic"},` + extra + `}`
	}
	for _, p := range []string{
		payload("PostToolUse", "toolu_task", `"tool_response":[]`),
		payload("PostToolUse", "toolu_other", `"tool_response":[]`),
		payload("PostToolUseFailure", "toolu_task", `"error":"Unsupported result type 'task' for tools/call"`),
	} {
		if r := invoke(t, p, env); r.code != ExitAllow {
			t.Fatalf("%s: %+v", p, r)
		}
	}
	l, err := effects.Read(ledger)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Calls) != 1 {
		t.Errorf("side effects %+v, want only the call that was no task", l.Calls)
	}
	if len(l.Tasks) != 1 || l.Tasks[0].ID != "t-1" || l.Tasks[0].ToolUseID != "toolu_task" {
		t.Errorf("tasks %+v, want the one exec-server recorded", l.Tasks)
	}
}

// TestHookTaskAcceptanceIsNoHealth: a server down in the cache (an outage
// in its backoff, or half-open with its trial due) answers a call with an
// MCP task; 2.1.197 hands PostToolUse an empty success. exec-server
// recorded the task under the call's tool_use_id, so the success is no
// proof of health: the server stays down. Another call's success (no
// task) brings it back. The hot path never answers either: a PostToolUse
// in a job that keeps a ledger goes to the whole hook.
func TestHookTaskAcceptanceIsNoHealth(t *testing.T) {
	ms := healthcheck.MillisOf(now)
	for _, tt := range []struct {
		name  string
		entry healthcheck.Entry
	}{
		{"an outage in its backoff", healthcheck.Entry{Status: healthcheck.StatusUnhealthy, NextRetryAt: ms + 30000, FailureCount: 1,
			LastFailureCode: healthcheck.CodeTransport, LastError: "Connection closed", UnhealthySince: ms - 5000}},
		{"half-open, its trial due", healthcheck.Entry{Status: healthcheck.StatusUnhealthy, NextRetryAt: ms - 1000, FailureCount: 1,
			LastFailureCode: healthcheck.CodeUnavailable, LastError: "upstream 503", UnhealthySince: ms - 40000, Witness: healthcheck.WitnessCalls}},
	} {
		for _, id := range []string{"toolu_task", "toolu_other"} {
			t.Run(tt.name+"/"+id, func(t *testing.T) {
				home := t.TempDir()
				state := filepath.Join(home, "cache.json")
				e := tt.entry
				seed(t, state, map[string]*healthcheck.Entry{"slowjobs": &e})
				ledger := filepath.Join(home, "run", "job", effects.FileName)
				if err := effects.RecordTask(ledger, 1, "slowjobs", "echo", effects.TaskRef{ID: "t-1", ToolUseID: "toolu_task"}, now); err != nil {
					t.Fatal(err)
				}
				env := map[string]string{"HOME": home, "NIGHTWATCH_STATE_PATH": state, effects.PathEnv: ledger, effects.AttemptEnv: "1"}
				p := `{"session_id":"s1","cwd":"/nonexistent","hook_event_name":"PostToolUse","tool_name":"mcp__slowjobs__echo","tool_use_id":"` + id +
					`","tool_input":{"message":"start"},"mcp_server":{"name":"slowjobs","source":"dynamic"},"tool_response":[]}`

				getenv := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
				pl, err := hot.DecodeFor(getenv, strings.NewReader(p))
				if err != nil {
					t.Fatal(err)
				}
				var out, errb bytes.Buffer
				if _, ok := hot.Answer(hot.Env{Getenv: getenv, Stdout: &out, Stderr: &errb, Now: func() time.Time { return now },
					Knobs: knobs.FromEnv(getenv, home)}, pl); ok {
					t.Fatal("the hot path answered a PostToolUse of a job that keeps a ledger")
				}

				if r := invoke(t, p, env); r.code != ExitAllow {
					t.Fatalf("PostToolUse: %+v", r)
				}
				cache, err := (&healthcheck.Store{Path: state}).Read()
				if err != nil {
					t.Fatal(err)
				}
				got := cache.Entry("slowjobs")
				if task := id == "toolu_task"; task != (got.Status == healthcheck.StatusUnhealthy) {
					t.Errorf("after the PostToolUse of %s: %s (%q), want unhealthy only when the call only accepted a task", id, got.Status, got.LastError)
				}
			})
		}
	}
}
