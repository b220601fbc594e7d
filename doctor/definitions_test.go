package doctor

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestServersTheHookCannotSee gives sessions servers the hook has no
// definition of, each the way users do it: --mcp-config in the batch's
// agent.args, a job allowing a server that is not among its servers, and a
// launchd or systemd entry that runs claude -p --mcp-config itself.
func TestServersTheHookCannotSee(t *testing.T) {
	t.Run("agent.args --mcp-config", func(t *testing.T) {
		s := newSandbox(t)
		s.writeBatch([]string{"--mode", "healthy"}, "pm2 restart notes")
		extra := filepath.Join(s.home, "extra-mcp.json")
		s.editBatch("agent: {command: "+s.claude+"}", "agent: {command: "+s.claude+", args: [--mcp-config, "+extra+", --max-turns, \"40\"]}")
		c := mustFind(t, s.run(), "definitions", Warn, "agent.args in "+s.batch+" pass --mcp-config "+extra, "never probed or blocked")
		if !strings.Contains(c.Fix, "servers:") || !strings.Contains(c.Fix, "NIGHTWATCH_MCP_CONFIG="+extra) {
			t.Errorf("fix: %s", c.Fix)
		}
	})
	t.Run("--mcp-config=FILE", func(t *testing.T) {
		s := newSandbox(t)
		s.writeBatch([]string{"--mode", "healthy"}, "pm2 restart notes")
		s.editBatch("agent: {command: "+s.claude+"}", "agent: {command: "+s.claude+", args: [\"--mcp-config=/srv/a.json\"]}")
		mustFind(t, s.run(), "definitions", Warn, "--mcp-config /srv/a.json")
	})
	t.Run("job allows a server it does not have", func(t *testing.T) {
		// A rule for a server the job does not declare is a load error now
		// (issue 10): doctor names the field instead of warning later.
		s := newSandbox(t)
		s.writeBatch([]string{"--mode", "healthy"}, "pm2 restart notes")
		s.editBatch("servers: [notes]}", "servers: [notes], allowed_tools: [mcp__notes, mcp__github__create_issue, \"mcp__github__*\", Read]}")
		mustFind(t, s.run(), "batch", Fail, "jobs[0].allowed_tools[1]", "matches no tool of the job's servers")
	})
	t.Run("launchd runs claude --mcp-config", func(t *testing.T) {
		s := newSandbox(t)
		p := filepath.Join(s.home, "Library", "LaunchAgents", "com.example.claude-night.plist")
		args := `<string>/usr/local/bin/claude</string><string>-p</string><string>nightly</string>` +
			`<string>--mcp-config</string><string>/Users/lily/night-mcp.json</string>`
		write(t, p, plistWith(`<key>PATH</key><string>/usr/bin:/bin</string>`, args))
		c := mustFind(t, s.run(), "definitions", Warn, p, "--mcp-config /Users/lily/night-mcp.json")
		if !strings.Contains(c.Fix, "<key>NIGHTWATCH_MCP_CONFIG</key><string>/Users/lily/night-mcp.json</string>") {
			t.Errorf("fix: %s", c.Fix)
		}
		// Handed over in the entry's environment: fine.
		write(t, p, plistWith(`<key>NIGHTWATCH_MCP_CONFIG</key><string>/Users/lily/night-mcp.json</string>`, args))
		mustFind(t, s.run(), "definitions", OK)
	})
	t.Run("systemd runs claude through sh", func(t *testing.T) {
		s := newSandbox(t)
		p := filepath.Join(s.home, ".config", "systemd", "user", "claude-night.service")
		write(t, p, "[Service]\nExecStart=/bin/sh -c \"claude -p nightly --mcp-config /srv/mcp.json\"\n")
		c := mustFind(t, s.run(), "definitions", Warn, p, "--mcp-config /srv/mcp.json")
		if !strings.Contains(c.Fix, `Environment="NIGHTWATCH_MCP_CONFIG=/srv/mcp.json"`) {
			t.Errorf("fix: %s", c.Fix)
		}
	})
	t.Run("not registered: the hooks check speaks instead", func(t *testing.T) {
		s := newSandbox(t)
		s.writeJSON(filepath.Join(s.home, ".claude", "settings.json"), map[string]any{})
		p := filepath.Join(s.home, ".config", "systemd", "user", "claude-night.service")
		write(t, p, "[Service]\nExecStart=/usr/bin/claude -p nightly --mcp-config /srv/mcp.json\n")
		mustFind(t, s.run(), "definitions", OK)
	})
}

func TestMCPConfigArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", "x", "--mcp-config", "a.json", "b.json", "--strict-mcp-config"}, "a.json b.json"},
		{[]string{"--mcp-config=a.json", "--verbose"}, "a.json"},
		{[]string{"--mcp-config"}, ""},
		{[]string{"--max-turns", "4"}, ""},
	} {
		if got := strings.Join(mcpConfigArgs(tc.args), " "); got != tc.want {
			t.Errorf("mcpConfigArgs(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
