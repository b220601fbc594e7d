package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editBatch rewrites the sandbox's batch file: old (which must be there)
// becomes new.
func (s *sandbox) editBatch(old, new string) {
	s.t.Helper()
	body, err := os.ReadFile(s.batch)
	if err != nil {
		s.t.Fatal(err)
	}
	if !strings.Contains(string(body), old) {
		s.t.Fatalf("the batch has no %q:\n%s", old, body)
	}
	write(s.t, s.batch, strings.Replace(string(body), old, new, 1))
}

func plistWith(envXML, argsXML string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>com.example.night</string>
  <key>ProgramArguments</key>
  <array>` + argsXML + `</array>
  <key>EnvironmentVariables</key>
  <dict>` + envXML + `</dict>
</dict>
</plist>
`
}

// TestHooksSwitchedOffByEnvironment sets each variable that turns Claude
// Code's hooks off in each place the night's environment comes from.
func TestHooksSwitchedOffByEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name  string
		trap  func(s *sandbox) (where string)
		want  []string
		inFix string
	}{
		{"shell", func(s *sandbox) string {
			s.env["CLAUDE_CODE_SIMPLE"] = "1"
			return "environment"
		}, []string{"CLAUDE_CODE_SIMPLE=1"}, "unset CLAUDE_CODE_SIMPLE"},
		{"batch env", func(s *sandbox) string {
			s.writeBatch([]string{"--mode", "healthy"}, "pm2 restart notes")
			s.editBatch("servers:\n", "env: {CLAUDE_CODE_SAFE_MODE: \"true\"}\nservers:\n")
			return s.batch
		}, []string{"the night's environment sets CLAUDE_CODE_SAFE_MODE=true"}, "remove CLAUDE_CODE_SAFE_MODE from the env of"},
		{"batch env_file", func(s *sandbox) string {
			s.writeBatch([]string{"--mode", "healthy"}, "pm2 restart notes")
			envFile := filepath.Join(s.home, "night.env")
			write(s.t, envFile, "CLAUDE_CODE_SIMPLE=1\n")
			s.editBatch("servers:\n", "env_file: "+envFile+"\nservers:\n")
			return s.batch
		}, []string{"CLAUDE_CODE_SIMPLE=1"}, "env_file (" + filepath.Join("HOME", "night.env")},
		{"launchd", func(s *sandbox) string {
			p := filepath.Join(s.home, "Library", "LaunchAgents", "com.example.night.plist")
			write(s.t, p, plistWith(`<key>CLAUDE_CODE_SAFE_MODE</key><string>1</string>`,
				`<string>/usr/local/bin/nightwatch</string><string>run</string><string>/x.yaml</string>`))
			return p
		}, []string{"EnvironmentVariables sets CLAUDE_CODE_SAFE_MODE=1"}, "<key>CLAUDE_CODE_SAFE_MODE</key>"},
		{"systemd", func(s *sandbox) string {
			p := filepath.Join(s.home, ".config", "systemd", "user", "nightwatch-nightly.service")
			write(s.t, p, "[Service]\nEnvironment=\"LANG=C\" CLAUDE_CODE_SIMPLE=yes\nExecStart=/usr/bin/nightwatch run /x.yaml\n")
			return p
		}, []string{"Environment=CLAUDE_CODE_SIMPLE=yes"}, "systemctl --user daemon-reload"},
		{"settings env", func(s *sandbox) string {
			p := filepath.Join(s.cwd, ".claude", "settings.json")
			s.writeJSON(p, map[string]any{"env": map[string]any{"CLAUDE_CODE_SAFE_MODE": "1"}})
			return p
		}, []string{`"env" sets CLAUDE_CODE_SAFE_MODE=1`}, `delete "CLAUDE_CODE_SAFE_MODE" from the "env" object`},
		{"--bare", func(s *sandbox) string {
			s.writeBatch([]string{"--mode", "healthy"}, "pm2 restart notes")
			s.editBatch("agent: {command: "+s.claude+"}", "agent: {command: "+s.claude+", args: [--bare]}")
			return s.batch
		}, []string{"agent.args has --bare"}, "remove --bare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSandbox(t)
			where := tc.trap(s)
			checks := s.run()
			c := mustFind(t, checks, "hooks-off", Fail, append([]string{where + ": "}, tc.want...)...)
			if fix := strings.ReplaceAll(c.Fix, s.home, "HOME"); !strings.Contains(fix, tc.inFix) {
				t.Errorf("fix %q lacks %q", c.Fix, tc.inFix)
			}
			if !Failed(checks) {
				t.Error("Failed = false")
			}
		})
	}

	// "0" and an unset variable are not a switch.
	s := newSandbox(t)
	s.env["CLAUDE_CODE_SIMPLE"] = "0"
	mustFind(t, s.run(), "hooks-off", OK)
}

// TestHooksSwitchedOffBySettings writes disableAllHooks and
// allowManagedHooksOnly into each kind of settings file Claude Code reads.
func TestHooksSwitchedOffBySettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    func(s *sandbox) string
		key     string
		managed bool
	}{
		{"user disableAllHooks", func(s *sandbox) string { return filepath.Join(s.home, ".claude", "settings.json") }, "disableAllHooks", false},
		{"project disableAllHooks", func(s *sandbox) string { return filepath.Join(s.cwd, ".claude", "settings.json") }, "disableAllHooks", false},
		{"local disableAllHooks", func(s *sandbox) string { return filepath.Join(s.cwd, ".claude", "settings.local.json") }, "disableAllHooks", false},
		{"managed disableAllHooks", func(s *sandbox) string { return filepath.Join(s.managed, "managed-settings.json") }, "disableAllHooks", true},
		{"managed drop-in disableAllHooks", func(s *sandbox) string { return filepath.Join(s.managed, "managed-settings.d", "10-hooks.json") }, "disableAllHooks", true},
		{"managed allowManagedHooksOnly", func(s *sandbox) string { return filepath.Join(s.managed, "managed-settings.json") }, "allowManagedHooksOnly", true},
		{"user allowManagedHooksOnly", func(s *sandbox) string { return filepath.Join(s.home, ".claude", "settings.json") }, "allowManagedHooksOnly", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSandbox(t)
			path := tc.file(s)
			settings := map[string]any{tc.key: true}
			if path == filepath.Join(s.home, ".claude", "settings.json") {
				// Keep the registration: the switch alone is the trap.
				settings = hooksSettings("mcp__.*", "/opt/nightwatch/bin/nightwatch hook")
				settings[tc.key] = true
			}
			s.writeJSON(path, settings)
			c := mustFind(t, s.run(), "hooks-off", Fail, path+": ", `"`+tc.key+`": true`)
			if !strings.Contains(c.Fix, path) || !strings.Contains(c.Fix, tc.key) {
				t.Errorf("fix: %s", c.Fix)
			}
			if tc.managed != strings.Contains(c.Fix, "whoever manages this machine") {
				t.Errorf("fix for a managed=%v file: %s", tc.managed, c.Fix)
			}
		})
	}

	// Managed hooks only, with nightwatch among the managed hooks: fine.
	s := newSandbox(t)
	managed := hooksSettings("mcp__.*", "/opt/nightwatch/bin/nightwatch hook")
	managed["allowManagedHooksOnly"] = true
	s.writeJSON(filepath.Join(s.managed, "managed-settings.json"), managed)
	mustFind(t, s.run(), "hooks-off", OK)

	// false is not a switch.
	s = newSandbox(t)
	s.writeJSON(filepath.Join(s.cwd, ".claude", "settings.local.json"), map[string]any{"disableAllHooks": false})
	mustFind(t, s.run(), "hooks-off", OK)
}

// TestClaudeConfigDirIsFollowed moves Claude Code's user folder with
// CLAUDE_CONFIG_DIR: the settings read are the moved ones, a registration
// left in ~/.claude/settings.json no longer counts, a switch in the moved
// file is found, and a .claude.json there that the hook's config search
// does not read is a warning with the variable that hands it over.
func TestClaudeConfigDirIsFollowed(t *testing.T) {
	s := newSandbox(t)
	dir := filepath.Join(s.home, "work-claude")
	moved := filepath.Join(dir, "settings.json")
	s.env["CLAUDE_CONFIG_DIR"] = dir
	checks := s.run()
	mustFind(t, checks, "hooks", Fail, "not registered", moved)

	settings := hooksSettings("mcp__.*", "/opt/nightwatch/bin/nightwatch hook")
	settings["disableAllHooks"] = true
	s.writeJSON(moved, settings)
	checks = s.run()
	mustFind(t, checks, "hooks", OK, moved)
	mustFind(t, checks, "hooks-off", Fail, moved, "disableAllHooks")

	delete(settings, "disableAllHooks")
	s.writeJSON(moved, settings)
	claudeJSON := filepath.Join(dir, ".claude.json")
	s.writeJSON(claudeJSON, map[string]any{"mcpServers": map[string]any{"notes": map[string]any{"command": "/bin/notes"}}})
	checks = s.run()
	// The hook's config search follows CLAUDE_CONFIG_DIR itself (as
	// Claude Code does): nothing to hand over.
	mustFind(t, checks, "definitions", OK)
	// An explicit NIGHTWATCH_MCP_CONFIG replaces the search: a file that is
	// not the moved .claude.json leaves its servers unseen.
	other := filepath.Join(s.home, "other-mcp.json")
	s.writeJSON(other, map[string]any{"mcpServers": map[string]any{}})
	s.env["NIGHTWATCH_MCP_CONFIG"] = other
	mustFind(t, s.run(), "definitions", Warn, claudeJSON)
	// Handed over: no warning.
	s.env["NIGHTWATCH_MCP_CONFIG"] = other + string(os.PathListSeparator) + claudeJSON
	mustFind(t, s.run(), "definitions", OK)
}
