package security_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/hook"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
)

// FuzzHookToolInput puts arbitrary bytes in tool_input of a PreToolUse call
// to mcp__notes__x while notes is down (and "other", which tool_input may
// name, is up). Whatever the bytes: exit 0 or 2, never an internal error;
// exit 2 comes with a deny decision for notes; and whenever the payload is
// a JSON object that encoding/json reads with the right event and tool
// name, the call is blocked: tool_input can neither crash the hook nor
// choose its server.
func FuzzHookToolInput(f *testing.F) {
	for _, seed := range []string{`{}`, `{"server":"other"}`, `{"mcp_server":"other","connector":"other"}`,
		`"x"`, `[[[[[]]]]]`, `{"a":"\u0000"}`, `{"tool_name":"mcp__other__x"}`, `1e999`, `{"a":`, `}`, `"`} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	state := filepath.Join(dir, "cache.json")
	seedCache(f, state, map[string]*healthcheck.Entry{"notes": unhealthy(), "other": healthy()})
	env := map[string]string{"HOME": dir, "NIGHTWATCH_STATE_PATH": state,
		"NIGHTWATCH_MCP_CONFIG": filepath.Join(dir, "none.json")}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	k := knobs.FromEnv(getenv, dir)
	f.Fuzz(func(t *testing.T, toolInput []byte) {
		payload := append([]byte(`{"hook_event_name":"PreToolUse","tool_name":"mcp__notes__x","tool_input":`), toolInput...)
		payload = append(payload, '}')
		var out, errb bytes.Buffer
		code := hook.Run(context.Background(), hook.Env{Getenv: getenv, Home: dir,
			Stdin: bytes.NewReader(payload), Stdout: &out, Stderr: &errb, Knobs: k})
		if strings.Contains(errb.String(), "internal error") {
			t.Fatalf("internal error for %q: %s", payload, errb.String())
		}
		switch code {
		case 0:
			// A map: encoding/json matches struct fields case-insensitively,
			// Claude Code's keys are exact.
			var ref map[string]any
			if json.Valid(payload) && json.Unmarshal(payload, &ref) == nil &&
				ref["hook_event_name"] == "PreToolUse" && ref["tool_name"] == "mcp__notes__x" {
				t.Fatalf("a well-formed call to dead notes went through: %q\n%s", payload, errb.String())
			}
			if out.Len() != 0 {
				t.Fatalf("exit 0 with a decision %q", out.String())
			}
		case 2:
			var d struct {
				Out struct {
					Decision string `json:"permissionDecision"`
					Reason   string `json:"permissionDecisionReason"`
				} `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal(out.Bytes(), &d); err != nil || d.Out.Decision != "deny" ||
				!strings.Contains(d.Out.Reason, `"notes"`) {
				t.Fatalf("exit 2 with decision %q (%v)", out.String(), err)
			}
		default:
			t.Fatalf("exit %d", code)
		}
	})
}
