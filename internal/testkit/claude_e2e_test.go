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

	// What the model sees of a hook's additionalContext and of a tool's
	// isError result differs between versions (reference §3, §6.3); the
	// fake records both the same way, and keeps what differs apart.
	t.Run("context-and-tool-errors", func(t *testing.T) {
		t.Parallel()
		cfg := WriteMCPConfig(t, map[string]any{"nw": map[string]any{"command": BuildTestServer(t)}})
		ctxHook := func(event, text string) []any {
			out := `{"hookSpecificOutput":{"hookEventName":"` + event + `","additionalContext":"` + text + `"}}`
			return []any{map[string]any{"matcher": "mcp__.*", "hooks": []any{map[string]any{
				"type": "command", "command": "cat >/dev/null; printf '%s' '" + out + "'", "timeout": 30}}}}
		}
		settings := WriteSettings(t, map[string]any{"hooks": map[string]any{
			"PostToolUse":        ctxHook("PostToolUse", "ADDCTX-TEXT"),
			"PostToolUseFailure": ctxHook("PostToolUseFailure", "FAILCTX-TEXT"),
		}})
		res := RunClaude(t, api, ClaudeRun{
			Version: version,
			Prompt: "SESSION ctx\n" + `CALL mcp__nw__echo {"message":"hello"}` + "\n" +
				`CALL mcp__nw__fail {"text":"FAIL-TEXT"}`,
			MCPConfig:    cfg,
			Settings:     settings,
			AllowedTools: []string{"mcp__nw"},
		})
		res.RequireSuccess(t)
		got := api.SessionToolResults("ctx")
		if len(got) != 2 {
			t.Fatalf("tool results = %+v, want 2", got)
		}
		deferred := clirange.Compare(version, "2.1.332") >= 0
		echo, fail := got[0], got[1]
		if echo.Content != "hello" || echo.IsError || echo.SchemaHint != "" ||
			!slices.Equal(echo.HookContext, []string{"PostToolUse:mcp__nw__echo hook additional context: ADDCTX-TEXT"}) {
			t.Errorf("echo result = %+v", echo)
		}
		if fail.Content != "FAIL-TEXT" || !fail.IsError ||
			!slices.Equal(fail.HookContext, []string{"PostToolUseFailure:mcp__nw__fail hook additional context: FAILCTX-TEXT"}) {
			t.Errorf("fail result = %+v", fail)
		}
		// 2.1.332 defers MCP tools behind ToolSearch and appends a schema
		// hint to a deferred tool's isError result; 2.1.197 does neither.
		if deferred {
			if !strings.HasPrefix(fail.SchemaHint, "\n\nThis tool's input schema was not in your prompt when you called it.") ||
				!strings.Contains(fail.SchemaHint, `call ToolSearch with query "select:mcp__nw__fail"`) {
				t.Errorf("schema hint = %q", fail.SchemaHint)
			}
		} else if fail.SchemaHint != "" {
			t.Errorf("schema hint on %s = %q, want none", version, fail.SchemaHint)
		}
		if fail.ModelSaw() != fail.Content+fail.SchemaHint {
			t.Errorf("ModelSaw = %q", fail.ModelSaw())
		}
		for _, r := range api.RequestLog() {
			if r.Main && r.Session == "ctx" && r.ToolSearch != deferred {
				t.Errorf("request %+v: ToolSearch offered = %v, want %v", r, r.ToolSearch, deferred)
			}
		}
	})
}
