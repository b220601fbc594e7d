package hook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// TestReconnectBringsServerBack runs the whole PreToolUse path for real: a
// stdio server that cannot start, a probe that sees it exit, the reconnect
// command (a real process, no shell) that repairs it, the re-probe that
// finds it healthy, and the call let through.
func TestReconnectBringsServerBack(t *testing.T) {
	dir := t.TempDir()
	control := filepath.Join(dir, "mode")
	if err := os.WriteFile(control, []byte("exit-at-start"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "mcp.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{
		"notes": map[string]any{"command": testkit.BuildTestServer(t), "args": []string{"--control", control}},
	}})
	// The "restart": write "healthy" to the control file. {server} is
	// substituted inside one argument after splitting.
	repair := filepath.Join(dir, "repair.sh")
	if err := os.WriteFile(repair, []byte("#!/bin/sh\necho healthy > \"$1\"\necho restarted \"$2\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "cache.json")
	env := map[string]string{"HOME": dir, "NIGHTWATCH_STATE_PATH": state, "NIGHTWATCH_MCP_CONFIG": cfg,
		"ECC_MCP_RECONNECT_NOTES": repair + " " + control + " {server}"}

	in := strings.Replace(payload("PreToolUse", "mcp__notes__echo", ""), "/nonexistent/project", dir, 1)
	r := invoke(t, in, env)
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("want the call allowed after the reconnect, got %+v", r)
	}
	f, _ := (&healthcheck.Store{Path: state}).Read()
	e := f.Servers["notes"]
	if e == nil || e.Status != healthcheck.StatusHealthy || e.RestoredBy != healthcheck.RestoredByReconnect {
		t.Fatalf("cache: %+v", e)
	}

	// Without a working reconnect the same failure blocks, and the reason
	// carries what the reconnect said.
	if err := os.WriteFile(control, []byte("exit-at-start"), 0o600); err != nil {
		t.Fatal(err)
	}
	env["NIGHTWATCH_RECONNECT_NOTES"] = "false"
	// Denied at once, not held: this is the reconnect's message (holds
	// are TestHold*'s).
	env["NIGHTWATCH_MAX_HOLD"] = "0"
	env["NIGHTWATCH_STATE_PATH"] = filepath.Join(dir, "cache2.json")
	r = invoke(t, in, env)
	if r.code != 2 || !strings.Contains(r.stdout, "reconnect failed") {
		t.Fatalf("want a block naming the failed reconnect, got %+v", r)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
