package hook

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/effects"
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
