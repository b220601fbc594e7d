package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
)

// TestPayloadFixtures reads the hook payloads of both supported versions
// (reference 2.1.332 §2): 2.1.332 adds mcp_server {name, source}; the model's
// tool_input may hold keys of the same names, which are never read.
func TestPayloadFixtures(t *testing.T) {
	tests := []struct {
		file, event, tool, server, source, errText string
	}{
		{"2.1.197-PreToolUse.json", PreToolUse, "mcp__notes__echo", "", "", ""},
		{"2.1.197-PostToolUse.json", PostToolUse, "mcp__notes__echo", "", "", ""},
		{"2.1.197-PostToolUseFailure.json", PostToolUseFailure, "mcp__notes__fail503", "", "", "MCP error -32000: upstream returned 503 Service Unavailable"},
		{"2.1.332-PreToolUse.json", PreToolUse, "mcp__my_notes__echo", "my.notes", "dynamic", ""},
		{"2.1.332-PostToolUse.json", PostToolUse, "mcp__my_notes__echo", "my.notes", "dynamic", ""},
		{"2.1.332-PostToolUseFailure.json", PostToolUseFailure, "mcp__my_notes__fail503", "my.notes", "dynamic", "upstream returned 503 Service Unavailable"},
		{"2.1.332-PermissionRequest.json", "PermissionRequest", "mcp__notes__echo", "notes", "project", ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "payloads", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			p, err := Decode(f)
			if err != nil {
				t.Fatal(err)
			}
			if p.Event != tt.event || p.ToolName != tt.tool || p.Server != tt.server || p.ServerSource != tt.source || p.Error != tt.errText {
				t.Errorf("got %+v", *p)
			}
		})
	}
}

// TestServerComesFromTheClient: mcp_server.name names the server (a name
// whose tool prefix is normalized, "my.notes" → mcp__my_notes__); without
// it the tool name does; tool_input never does.
func TestServerComesFromTheClient(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "cache.json")
	ms := healthcheck.MillisOf(now)
	down := &healthcheck.Entry{Status: "unhealthy", LastFailureCode: healthcheck.CodeTransport, NextRetryAt: ms + 30000, FailureCount: 1}
	seed(t, state, map[string]*healthcheck.Entry{"my.notes": down, "evil": down})
	env := map[string]string{"HOME": home, "NIGHTWATCH_STATE_PATH": state}

	in, _ := os.ReadFile(filepath.Join("testdata", "payloads", "2.1.332-PreToolUse.json"))
	r := invoke(t, string(in), env)
	if r.code != ExitBlock || !strings.Contains(r.stdout, `MCP server \"my.notes\" is unreachable`) {
		t.Fatalf("2.1.332: want my.notes blocked, got %+v", r)
	}
	// The same call as 2.1.197 sends it: no mcp_server, and the model's
	// tool_input names "evil", which is down: still the tool name decides.
	in197 := `{"hook_event_name":"PreToolUse","tool_name":"mcp__fresh__echo","cwd":"/nonexistent","tool_input":{"server":"evil","mcp_server":{"name":"evil"}},"mcp_serverX":1}`
	r = invoke(t, in197, env)
	if r.code != ExitAllow {
		t.Fatalf("tool_input decided the server: %+v", r)
	}
}

// TestPassiveHealthWithoutDefinition: a server the hook has no definition
// of (a session's --mcp-config) has its failures recorded and counted; the
// third upstream failure blocks the next call.
func TestPassiveHealthWithoutDefinition(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "cache.json")
	env := map[string]string{"HOME": home, "NIGHTWATCH_STATE_PATH": state}
	fail, _ := os.ReadFile(filepath.Join("testdata", "payloads", "2.1.332-PostToolUseFailure.json"))
	pre, _ := os.ReadFile(filepath.Join("testdata", "payloads", "2.1.332-PreToolUse.json"))
	for i := 0; i < 3; i++ {
		if r := invoke(t, string(pre), env); r.code != ExitAllow {
			t.Fatalf("call %d blocked early: %+v", i+1, r)
		}
		if r := invoke(t, string(fail), env); r.code != ExitAllow {
			t.Fatalf("PostToolUseFailure: %+v", r)
		}
	}
	r := invoke(t, string(pre), env)
	if r.code != ExitBlock || !strings.Contains(r.stdout, "unavailable") {
		t.Fatalf("the fourth call must be blocked: %+v", r)
	}
	f, _ := (&healthcheck.Store{Path: state}).Read()
	e := f.Entry("my.notes")
	if e == nil || e.Witness != healthcheck.WitnessCalls || e.ArticleCode() != healthcheck.Article503 {
		t.Fatalf("cache: %+v", e)
	}
}
