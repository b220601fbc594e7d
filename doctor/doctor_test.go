package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/clirange"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// sandbox is a home, a project folder, an environment and a fake claude,
// all real files under t.TempDir().
type sandbox struct {
	t         *testing.T
	home, cwd string
	env       map[string]string
	claude    string
	batch     string
	managed   string // ManagedSettingsDir: a temp folder, not /etc/claude-code
	// agentTimeout bounds each run of the agent; 0 = minutes, because the
	// tests check verdicts, not how fast a busy machine starts the CLI.
	agentTimeout time.Duration
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	home := t.TempDir()
	s := &sandbox{t: t, home: home, cwd: filepath.Join(home, "project"), managed: filepath.Join(home, "managed")}
	mkdir(t, s.cwd)
	bin := filepath.Join(home, "bin")
	mkdir(t, bin)
	s.claude = filepath.Join(bin, "claude")
	s.fakeClaude(clirange.Newest + " (Claude Code)")
	s.env = map[string]string{"PATH": bin + ":/usr/bin:/bin", "HOME": home, "USER": "tester"}
	// A healthy registration: the trap tests break one thing at a time.
	s.writeJSON(filepath.Join(home, ".claude", "settings.json"), hooksSettings("mcp__.*", "/opt/nightwatch/bin/nightwatch hook"))
	return s
}

func (s *sandbox) fakeClaude(version string) {
	// `auth status` answers as a CLI logged in with a setup-token would
	// (the login check's own tests run the real CLIs).
	write(s.t, s.claude, "#!/bin/sh\nif [ \"$1\" = auth ]; then echo '{\"loggedIn\":true,\"authMethod\":\"oauth_token\",\"apiProvider\":\"firstParty\"}'; exit 0; fi\necho '"+version+"'\n")
	if err := os.Chmod(s.claude, 0o755); err != nil {
		s.t.Fatal(err)
	}
}

// writeBatch writes a batch with one stdio server (the test MCP server)
// and returns its path.
func (s *sandbox) writeBatch(args []string, reconnect string) string {
	server := testkit.BuildTestServer(s.t)
	quoted, _ := json.Marshal(args)
	body := fmt.Sprintf(`version: 1
name: doctortest
state_dir: %s
agent: {command: %s}
servers:
  notes:
    command: %s
    args: %s
    reconnect: %q
jobs:
  - {name: only, prompt: "say hi", servers: [notes]}
`, filepath.Join(s.home, "state"), s.claude, server, quoted, reconnect)
	s.batch = filepath.Join(s.home, "night.yaml")
	write(s.t, s.batch, body)
	return s.batch
}

func (s *sandbox) run() []Check {
	s.t.Helper()
	var environ []string
	for k, v := range s.env {
		environ = append(environ, k+"="+v)
	}
	agentTimeout := s.agentTimeout
	if agentTimeout == 0 {
		agentTimeout = 5 * time.Minute
	}
	checks := Run(context.Background(), Options{
		BatchFile: s.batch, Home: s.home, Cwd: s.cwd, ManagedSettingsDir: s.managed, AgentTimeout: agentTimeout,
		Getenv:       func(n string) (string, bool) { v, ok := s.env[n]; return v, ok },
		Environ:      environ,
		ProbeTimeout: 5 * time.Second,
	})
	var buf bytes.Buffer
	Print(&buf, checks)
	s.t.Logf("doctor:\n%s", buf.String())
	return checks
}

func (s *sandbox) writeJSON(path string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		s.t.Fatal(err)
	}
	write(s.t, path, string(b))
}

func hooksSettings(matcher string, commands ...string) map[string]any {
	entry := func(timeout int) []map[string]any {
		var hooks []map[string]any
		for _, c := range commands {
			hooks = append(hooks, map[string]any{"type": "command", "command": c, "timeout": timeout})
		}
		return []map[string]any{{"matcher": matcher, "hooks": hooks}}
	}
	// PreToolUse's timeout fits the default hold (the README's 180 s).
	return map[string]any{"hooks": map[string]any{"PreToolUse": entry(180), "PostToolUse": entry(60), "PostToolUseFailure": entry(60)}}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// find returns the checks of id at level whose detail holds every want.
func find(checks []Check, id string, level Level, want ...string) []Check {
	var out []Check
	for _, c := range checks {
		if c.ID == id && c.Level == level && containsAll(c.Detail, want) {
			out = append(out, c)
		}
	}
	return out
}

func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

func mustFind(t *testing.T, checks []Check, id string, level Level, want ...string) Check {
	t.Helper()
	found := find(checks, id, level, want...)
	if len(found) == 0 {
		t.Fatalf("no %s %s check mentioning %q in:\n%s", level, id, want, dump(checks))
	}
	if level != OK && found[0].Fix == "" {
		t.Fatalf("%s %s has no fix: %+v", level, id, found[0])
	}
	return found[0]
}

func dump(checks []Check) string {
	var buf bytes.Buffer
	Print(&buf, checks)
	return buf.String()
}

func TestCleanSetupIsAllOK(t *testing.T) {
	s := newSandbox(t)
	s.writeBatch([]string{"--mode", "healthy"}, "pm2 restart notes")
	checks := s.run()
	ids := map[string]bool{}
	for _, c := range checks {
		ids[c.ID] = true
		if c.Level != OK {
			t.Errorf("not ok: %+v", c)
		}
	}
	for _, id := range []string{"batch", "fail-open", "hooks-off", "config-path", "shadowed", "env", "cache", "hooks", "definitions", "reconnect", "agent", "agent-login"} {
		if !ids[id] {
			t.Errorf("no %s check", id)
		}
	}
	if Failed(checks) {
		t.Error("Failed on a clean setup")
	}
	var buf bytes.Buffer
	Print(&buf, checks)
	if !strings.Contains(buf.String(), "ok   fail-open      not set anywhere\n") {
		t.Errorf("print:\n%s", buf.String())
	}
}

func TestFailOpenInLaunchdPlist(t *testing.T) {
	s := newSandbox(t)
	plist := filepath.Join(s.home, "Library", "LaunchAgents", "com.example.night.plist")
	write(t, plist, `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>com.example.night</string>
  <key>ProgramArguments</key>
  <array><string>/usr/local/bin/node</string><string>/Users/lily/run.js</string></array>
  <key>EnvironmentVariables</key>
  <dict>
    <key>ECC_MCP_CONFIG_PATH</key><string>/Users/lily/.claude/settings.json</string>
    <key>ECC_MCP_HEALTH_FAIL_OPEN</key><string>1</string>
  </dict>
  <key>RunAtLoad</key><true/>
</dict>
</plist>
`)
	checks := s.run()
	c := mustFind(t, checks, "fail-open", Fail, plist, "ECC_MCP_HEALTH_FAIL_OPEN=1")
	if !strings.Contains(c.Fix, "<key>ECC_MCP_HEALTH_FAIL_OPEN</key>") {
		t.Errorf("fix: %s", c.Fix)
	}
	if !Failed(checks) {
		t.Error("Failed = false")
	}
}

func TestFailOpenElsewhere(t *testing.T) {
	s := newSandbox(t)
	s.env["NIGHTWATCH_FAIL_OPEN"] = "true"
	unit := filepath.Join(s.home, ".config", "systemd", "user", "nightwatch.service")
	write(t, unit, "[Service]\nEnvironment=\"LANG=C\" NIGHTWATCH_FAIL_OPEN=yes\nExecStart=/usr/bin/nightwatch run /x.yaml\n")
	project := filepath.Join(s.cwd, ".claude", "settings.local.json")
	s.writeJSON(project, map[string]any{"env": map[string]any{"ECC_MCP_HEALTH_FAIL_OPEN": "1"}})
	checks := s.run()
	mustFind(t, checks, "fail-open", Fail, "environment", "NIGHTWATCH_FAIL_OPEN=true")
	mustFind(t, checks, "fail-open", Fail, unit)
	mustFind(t, checks, "fail-open", Fail, project, `"env"`)

	// "0" is a value, not fail-open.
	s = newSandbox(t)
	s.env["ECC_MCP_HEALTH_FAIL_OPEN"] = "0"
	mustFind(t, s.run(), "fail-open", OK)
}

func TestFailOpenInHookCommandAndBatch(t *testing.T) {
	s := newSandbox(t)
	s.writeJSON(filepath.Join(s.home, ".claude", "settings.json"),
		hooksSettings("mcp__.*", "ECC_MCP_HEALTH_FAIL_OPEN=1 /opt/nightwatch/bin/nightwatch hook"))
	s.writeBatch([]string{"--mode", "healthy"}, "pm2 restart notes")
	body, _ := os.ReadFile(s.batch)
	write(t, s.batch, strings.Replace(string(body), "name: doctortest\n", "name: doctortest\nfail_open: true\n", 1))
	checks := s.run()
	mustFind(t, checks, "fail-open", Fail, "hook command")
	mustFind(t, checks, "fail-open", Fail, s.batch, "fail_open: true")
}

func TestConfigPathWithTilde(t *testing.T) {
	s := newSandbox(t)
	s.env["NIGHTWATCH_MCP_CONFIG"] = "/Users/~/.claude/settings.json"
	checks := s.run()
	c := mustFind(t, checks, "config-path", Fail, "launchd does not expand ~")
	if want := filepath.Join(s.home, ".claude", "settings.json"); !strings.Contains(c.Fix, want) {
		t.Errorf("fix %q does not name %s", c.Fix, want)
	}
	// The missing file is the same finding: one line, not two.
	if n := len(find(checks, "config-path", Fail)); n != 1 {
		t.Errorf("%d config-path failures", n)
	}
}

func TestConfigPathMissingFile(t *testing.T) {
	s := newSandbox(t)
	missing := filepath.Join(s.home, "nope.json")
	s.env["ECC_MCP_CONFIG_PATH"] = missing
	mustFind(t, s.run(), "config-path", Fail, "ECC_MCP_CONFIG_PATH lists "+missing, "does not exist")
}

func TestConfigPathBrokenFile(t *testing.T) {
	s := newSandbox(t)
	broken := filepath.Join(s.home, "mcp.json")
	write(t, broken, `{"mcpServers": {`)
	s.env["ECC_MCP_CONFIG_PATH"] = broken
	mustFind(t, s.run(), "config-path", Fail, broken)
}

func TestShadowedServer(t *testing.T) {
	s := newSandbox(t)
	project := filepath.Join(s.cwd, ".mcp.json")
	user := filepath.Join(s.home, ".claude.json")
	s.writeJSON(project, map[string]any{"mcpServers": map[string]any{"notes": map[string]any{"command": "/bin/notes-new"}}})
	s.writeJSON(user, map[string]any{"mcpServers": map[string]any{"notes": map[string]any{"command": "/bin/notes-old"}}})
	c := mustFind(t, s.run(), "shadowed", Warn, `"notes"`, project+" (project) wins", "shadowed: "+user+" (user)")
	if !strings.Contains(c.Fix, user) {
		t.Errorf("fix: %s", c.Fix)
	}
}

func TestLaunchdTrap(t *testing.T) {
	s := newSandbox(t)
	s.env["NOTES_API_KEY"] = "secret-from-zshrc"
	s.env["UNRELATED_TOKEN"] = "x"
	s.writeBatch([]string{"--mode", "require-env=NOTES_API_KEY"}, "pm2 restart notes")
	checks := s.run()
	c := mustFind(t, checks, "env", Fail, `"notes"`, "works in your shell, fails under launchd/cron: missing NOTES_API_KEY")
	if strings.Contains(c.Detail, "UNRELATED_TOKEN") || !strings.Contains(c.Fix, "NOTES_API_KEY") {
		t.Errorf("check: %+v", c)
	}
	if strings.Contains(c.Detail, "secret-from-zshrc") {
		t.Error("a value leaked into the report")
	}
}

func TestRequiredVariableMissingAtNight(t *testing.T) {
	s := newSandbox(t)
	s.env["NOTES_API_KEY"] = "k"
	s.writeBatch([]string{"--mode", "healthy"}, "pm2 restart notes")
	body, _ := os.ReadFile(s.batch)
	write(t, s.batch, strings.Replace(string(body), "    reconnect:", "    requires_env: [NOTES_API_KEY]\n    reconnect:", 1))
	mustFind(t, s.run(), "env", Fail, "under launchd/cron", "NOTES_API_KEY")
}

func TestCacheUnwritable(t *testing.T) {
	s := newSandbox(t)
	file := filepath.Join(s.home, "not-a-folder")
	write(t, file, "x")
	// Root ignores permission bits: a path below a regular file is what
	// nobody can write.
	s.env["NIGHTWATCH_STATE_PATH"] = filepath.Join(file, "cache.json")
	mustFind(t, s.run(), "cache", Fail, "cannot be written")
}

func TestCacheModeCorruptAndStuck(t *testing.T) {
	s := newSandbox(t)
	cache := filepath.Join(s.home, ".claude", "mcp-health-cache.json")
	now := time.Now().UnixMilli()
	write(t, cache, fmt.Sprintf(`{"version":1,"servers":{
  "agentmemory":{"status":"unhealthy","checkedAt":%d,"expiresAt":%d,"failureCount":7,"lastError":"ECONNREFUSED","lastFailureCode":"transport","nextRetryAt":%d,"lastRestoredAt":null},
  "obsidian":{"status":"healthy","checkedAt":%d,"expiresAt":%d,"failureCount":0,"lastError":null,"lastFailureCode":null,"nextRetryAt":%d,"lastRestoredAt":null}}}`,
		now, now, now+600000, now, now+120000, now))
	if err := os.Chmod(cache, 0o644); err != nil {
		t.Fatal(err)
	}
	checks := s.run()
	c := mustFind(t, checks, "cache", Warn, "0644")
	if c.Fix != "chmod 600 "+cache {
		t.Errorf("fix: %s", c.Fix)
	}
	c = mustFind(t, checks, "cache", Warn, `"agentmemory" is stuck`)
	if !strings.HasSuffix(c.Fix, "nightwatch reset --stuck") {
		t.Errorf("fix: %s", c.Fix)
	}
	if len(find(checks, "cache", Warn, "obsidian")) > 0 {
		t.Error("a healthy entry reported as stuck")
	}

	write(t, cache, "{not json")
	c = mustFind(t, s.run(), "cache", Fail, "corrupt")
	if !strings.Contains(c.Fix, "nightwatch reset --all") {
		t.Errorf("fix: %s", c.Fix)
	}
}

func TestNodeHookNextToNightwatch(t *testing.T) {
	s := newSandbox(t)
	settings := filepath.Join(s.home, ".claude", "settings.json")
	s.writeJSON(settings, hooksSettings("mcp__.*", "/opt/nightwatch/bin/nightwatch hook", "node ~/.claude/scripts/hooks/mcp-health-check.js"))
	mustFind(t, s.run(), "hooks", Fail, "double probing", settings)
}

func TestMatcherMissesMCPTools(t *testing.T) {
	s := newSandbox(t)
	s.writeJSON(filepath.Join(s.home, ".claude", "settings.json"), hooksSettings("mcp__notes", "/opt/nightwatch/bin/nightwatch hook"))
	c := mustFind(t, s.run(), "hooks", Fail, `"mcp__notes"`, "misses MCP tools")
	if !strings.Contains(c.Fix, `"mcp__.*"`) {
		t.Errorf("fix: %s", c.Fix)
	}
}

func TestMatcherRule(t *testing.T) {
	for _, tc := range []struct {
		matcher, tool string
		want          bool
	}{
		{"", "mcp__x__y", true},
		{"*", "mcp__x__y", true},
		{"mcp__.*", "mcp__x__y", true},
		{"mcp__x", "mcp__x__y", false},         // exact name list
		{"Bash|mcp__x__y", "mcp__x__y", true},  // exact name list
		{"mcp__x__.*", "mcp__notes__y", false}, // one server only
		{"notes", "mcp__notes__y", false},      // exact, not a substring
		{"mcp__n.tes", "mcp__notes__y", true},  // a regexp, unanchored
		{"(unclosed", "mcp__x__y", false},      // a broken regexp matches nothing
	} {
		if got := matcherMatches(tc.matcher, tc.tool); got != tc.want {
			t.Errorf("matcherMatches(%q, %q) = %v", tc.matcher, tc.tool, got)
		}
	}
}

func TestHooksNotRegisteredOrProjectOnly(t *testing.T) {
	s := newSandbox(t)
	if err := os.Remove(filepath.Join(s.home, ".claude", "settings.json")); err != nil {
		t.Fatal(err)
	}
	mustFind(t, s.run(), "hooks", Fail, "not registered for PreToolUse, PostToolUse, PostToolUseFailure")

	// With a batch the supervisor injects the hook: a warning only.
	s.writeBatch([]string{"--mode", "healthy"}, "pm2 restart notes")
	mustFind(t, s.run(), "hooks", Warn, "not registered")

	project := filepath.Join(s.cwd, ".claude", "settings.json")
	s.writeJSON(project, hooksSettings("mcp__.*", "nightwatch hook"))
	mustFind(t, s.run(), "hooks", Warn, "only in "+project, "sessions elsewhere are unprotected")
}

func TestReconnectCommands(t *testing.T) {
	s := newSandbox(t)
	s.writeBatch([]string{"--mode", "healthy"}, "pm2 restart x && echo ok")
	// The syntax is quoted: "($)" would read as a stray parenthesis for "$(".
	c := mustFind(t, s.run(), "reconnect", Fail, `shell syntax ("&&")`)
	if c.Fix != `write it as: sh -c 'pm2 restart x && echo ok'` {
		t.Errorf("fix: %s", c.Fix)
	}

	s.writeBatch([]string{"--mode", "healthy"}, "")
	mustFind(t, s.run(), "reconnect", Warn, `"notes" has no reconnect command`)

	// ECC_MCP_RECONNECT_COMMAND counts, as in the Node hook.
	s.env["ECC_MCP_RECONNECT_COMMAND"] = "pm2 restart {server}"
	mustFind(t, s.run(), "reconnect", OK)

	s.env["ECC_MCP_RECONNECT_COMMAND"] = `pm2 restart "{server}`
	mustFind(t, s.run(), "reconnect", Fail, "cannot be split")
}

func TestAgentVersion(t *testing.T) {
	for _, tc := range []struct {
		printed string
		level   Level
		want    []string
	}{
		{"1.0.3 (Claude Code)", Fail, []string{"Claude Code 1.0.3", "older than every version nightwatch is tested with", clirange.Oldest + " to " + clirange.Newest}},
		{"2.1.196 (Claude Code)", Fail, []string{"2.1.196", "older than"}},
		{clirange.Oldest + " (Claude Code)", OK, []string{clirange.Oldest, "inside the tested range"}},
		{clirange.Newest + " (Claude Code)", OK, []string{clirange.Newest, "inside the tested range"}},
		{"2.1.400 (Claude Code)", Warn, []string{"2.1.400", "newer than tested"}},
		{"3.0.0 (Claude Code)", Warn, []string{"3.0.0", "newer than tested"}},
		{"not a version", Warn, []string{`"not a version"`, `not "X.Y.Z (Claude Code)"`}},
	} {
		t.Run(tc.printed, func(t *testing.T) {
			s := newSandbox(t)
			s.fakeClaude(tc.printed)
			checks := s.run()
			c := mustFind(t, checks, "agent", tc.level, tc.want...)
			if tc.level == Fail && !strings.Contains(c.Fix, "claude update") {
				t.Errorf("fix: %s", c.Fix)
			}
		})
	}

	s := newSandbox(t)
	s.env["PATH"] = "/usr/bin:/bin"
	if slices.ContainsFunc(strings.Split(s.env["PATH"], ":"), func(d string) bool { _, err := os.Stat(filepath.Join(d, "claude")); return err == nil }) {
		t.Skip("a real claude is installed in /usr/bin or /bin")
	}
	mustFind(t, s.run(), "agent", Fail, "claude not found")
}

// TestAgentVersionOfThePinnedCLIs runs doctor against the real binaries of
// every pinned Claude Code version: each reads as inside the range.
func TestAgentVersionOfThePinnedCLIs(t *testing.T) {
	for _, v := range testkit.ClaudeVersions(t) {
		t.Run(v, func(t *testing.T) {
			s := newSandbox(t)
			checks := Run(context.Background(), Options{Home: s.home, Cwd: s.cwd, ManagedSettingsDir: s.managed, AgentTimeout: 5 * time.Minute,
				ClaudeBin: testkit.ClaudeBinOf(t, v),
				Getenv:    func(n string) (string, bool) { val, ok := s.env[n]; return val, ok }})
			mustFind(t, checks, "agent", OK, "Claude Code "+v+", inside the tested range")
		})
	}
}

func TestAgentHangIsBounded(t *testing.T) {
	s := newSandbox(t)
	s.agentTimeout = time.Second
	write(t, s.claude, "#!/bin/sh\nsleep 600 &\nwait\n")
	mustFind(t, s.run(), "agent", Fail, "no answer within 1s")
}
