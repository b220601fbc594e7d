package testkit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/clirange"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

// TestClaudeE2E proves the harness: the real Claude Code CLI, driven by the
// fake Messages API, calls tools of the reference MCP server, and the fake
// records exactly what the model saw. Both sessions share one fake and run
// at the same time, which also exercises SESSION tagging.
func TestClaudeE2E(t *testing.T) {
	ForEachClaude(t, testClaudeE2E)
}

func testClaudeE2E(t *testing.T, version string) {
	api := fakeapi.Start(t)
	mcpConfig := WriteMCPConfig(t, map[string]any{"everything": EverythingStdio(t)})

	t.Run("echo", func(t *testing.T) {
		t.Parallel()
		res := RunClaude(t, api, ClaudeRun{
			Version: version,
			Prompt: "SESSION echo\n" +
				`CALL mcp__everything__echo {"message":"hello nightwatch"}` + "\n" +
				`CALL mcp__everything__get-sum {"a":2,"b":3}`,
			MCPConfig:    mcpConfig,
			AllowedTools: []string{"mcp__everything"},
		})
		t.Logf("session took %s", res.Duration)
		res.RequireSuccess(t)
		if got := res.MCPServerStatus("everything"); got != "connected" {
			t.Errorf("init status of everything = %q, want connected", got)
		}
		if !slices.Contains(res.Tools(), "mcp__everything__echo") {
			t.Errorf("init tools lack mcp__everything__echo: %v", res.Tools())
		}
		if res.ResultText() != fakeapi.FinalText {
			t.Errorf("result text = %q, want %q", res.ResultText(), fakeapi.FinalText)
		}

		got := api.SessionToolResults("echo")
		if len(got) != 2 {
			t.Fatalf("tool results = %+v, want 2", got)
		}
		if r := got[0]; r.ToolName != "mcp__everything__echo" || r.IsError ||
			!strings.Contains(r.Content, "hello nightwatch") {
			t.Errorf("first tool result = %+v, want a non-error echo of %q", r, "hello nightwatch")
		}
		if r := got[1]; r.ToolName != "mcp__everything__get-sum" || r.IsError || !strings.Contains(r.Content, "5") {
			t.Errorf("second tool result = %+v, want a non-error sum 5", r)
		}
	})

	t.Run("pretooluse-deny", func(t *testing.T) {
		t.Parallel()
		hook := filepath.Join(t.TempDir(), "deny-hook.sh")
		script := "#!/bin/sh\ncat >/dev/null\n" +
			`printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"blocked by test"}}'` +
			"\nexit 0\n"
		if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		settings := WriteSettings(t, map[string]any{"hooks": map[string]any{
			"PreToolUse": []any{map[string]any{
				"matcher": "mcp__.*",
				"hooks":   []any{map[string]any{"type": "command", "command": hook, "timeout": 30}},
			}},
		}})
		res := RunClaude(t, api, ClaudeRun{
			Version:      version,
			Prompt:       "SESSION deny\n" + `CALL mcp__everything__echo {"message":"must not run"}`,
			MCPConfig:    mcpConfig,
			Settings:     settings,
			AllowedTools: []string{"mcp__everything"},
		})
		t.Logf("session took %s", res.Duration)
		res.RequireSuccess(t)

		got := api.SessionToolResults("deny")
		if len(got) != 1 {
			t.Fatalf("tool results = %+v, want 1", got)
		}
		// 2.1.332 frames every PreToolUse deny as a hook error; 2.1.197
		// passed the reason through verbatim (reference §3).
		want := "blocked by test"
		if clirange.Compare(version, "2.1.332") >= 0 {
			want = "PreToolUse:mcp__everything__echo hook error: blocked by test"
		}
		if r := got[0]; r.Content != want || !r.IsError || r.ToolName != "mcp__everything__echo" {
			t.Errorf("tool result = %+v, want is_error with exactly %q", r, want)
		}
		if hr := res.HookResponses("PreToolUse"); len(hr) != 1 || hr[0]["outcome"] != "success" {
			t.Errorf("PreToolUse hook responses = %v, want one success", hr)
		}
		if d := res.PermissionDenials(); len(d) != 1 || d[0]["tool_name"] != "mcp__everything__echo" {
			t.Errorf("permission_denials = %v, want the echo call", d)
		}
		if strings.Contains(res.DebugLog, "Calling MCP tool: echo") {
			t.Errorf("the denied tool reached the MCP server")
		}
	})
}
