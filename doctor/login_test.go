package doctor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// secret values the tests plant; no doctor output may show them.
const (
	testAPIKey = "sk-ant-api03-doctor-test-secret-value"
	testToken  = "sk-ant-oat01-doctor-test-secret-token"
)

// loginBox is a home, a batch and an operator environment for the login
// check, run against a real pinned CLI (`claude auth status` needs no
// network and spends no model turn).
type loginBox struct {
	t       *testing.T
	home    string
	claude  string
	shell   map[string]string // the operator's environment
	envFile string            // "" = the batch has no env_file
	batch   string
}

func newLoginBox(t *testing.T, claude string) *loginBox {
	home := t.TempDir()
	return &loginBox{t: t, home: home, claude: claude,
		shell: map[string]string{"PATH": "/usr/bin:/bin", "HOME": home, "USER": "tester"}}
}

func (b *loginBox) writeBatch(envFile string) {
	b.batch = filepath.Join(b.home, "night.yaml")
	body := fmt.Sprintf("version: 1\nname: logintest\nstate_dir: %s\nagent: {command: %s}\n",
		filepath.Join(b.home, "state"), b.claude)
	if envFile != "" {
		write(b.t, filepath.Join(b.home, "night.env"), envFile)
		body += "env_file: night.env\n"
	}
	body += "jobs:\n  - {name: only, prompt: \"say hi\"}\n"
	write(b.t, b.batch, body)
}

func (b *loginBox) run() []Check {
	b.t.Helper()
	e := &env{Options: withDefaults(Options{BatchFile: b.batch, Home: b.home, Cwd: b.home, ClaudeBin: b.claude,
		ManagedSettingsDir: filepath.Join(b.home, "managed"),
		// The verdicts are what this test checks, not the CLI's start-up
		// time on a loaded machine.
		AgentTimeout: 5 * time.Minute,
		Getenv:       func(n string) (string, bool) { v, ok := b.shell[n]; return v, ok },
		Environ:      []string{"PATH=/usr/bin:/bin"}})}
	if b.batch != "" {
		bt, err := jobs.LoadWith(b.batch, e.Getenv, jobs.LoadOptions{AgentOptional: true})
		if err != nil {
			b.t.Fatalf("batch: %v", err)
		}
		e.batch = bt
	}
	checks := e.login(context.Background())
	var buf bytes.Buffer
	Print(&buf, checks)
	b.t.Logf("doctor:\n%s", buf.String())
	for _, secret := range []string{testAPIKey, testToken} {
		if strings.Contains(buf.String(), secret) {
			b.t.Errorf("doctor output shows a secret value")
		}
	}
	return checks
}

func TestAgentLogin(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		bin := testkit.ClaudeBinOf(t, version)
		cases := []struct {
			name  string
			setup func(b *loginBox)
			level Level
			want  []string
		}{
			{"no login anywhere", func(b *loginBox) { b.writeBatch("") }, Fail, []string{"not logged in"}},
			{"key only in the shell", func(b *loginBox) {
				b.shell["ANTHROPIC_API_KEY"] = testAPIKey
				b.writeBatch("")
			}, Fail, []string{"not logged in", "your shell has ANTHROPIC_API_KEY but the night does not"}},
			{"API key in env_file", func(b *loginBox) { b.writeBatch("ANTHROPIC_API_KEY=" + testAPIKey + "\n") },
				OK, []string{"API key from ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY from the batch's env/env_file"}},
			{"setup-token in env_file", func(b *loginBox) { b.writeBatch("CLAUDE_CODE_OAUTH_TOKEN=" + testToken + "\n") },
				OK, []string{"long-lived OAuth token", "CLAUDE_CODE_OAUTH_TOKEN from the batch's env/env_file"}},
			{"launchd entry's EnvironmentVariables", func(b *loginBox) {
				b.writeBatch("")
				write(t, filepath.Join(b.home, "Library", "LaunchAgents", "dev.nightwatch.logintest.plist"),
					`<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>Label</key><string>dev.nightwatch.logintest</string>
<key>ProgramArguments</key><array><string>/opt/nightwatch</string><string>run</string><string>`+b.batch+`</string></array>
<key>EnvironmentVariables</key>
<dict>
  <key>ANTHROPIC_API_KEY</key>
  <string>`+testAPIKey+`</string>
</dict></dict></plist>`)
			}, OK, []string{"API key", "ANTHROPIC_API_KEY from launchd dev.nightwatch.logintest.plist"}},
			{"systemd unit's Environment=", func(b *loginBox) {
				b.writeBatch("")
				write(t, filepath.Join(b.home, ".config", "systemd", "user", "nightwatch-logintest.service"),
					"[Service]\nExecStart=/opt/nightwatch run "+b.batch+"\nEnvironment=\"CLAUDE_CODE_OAUTH_TOKEN="+testToken+"\"\n")
			}, OK, []string{"long-lived OAuth token", "CLAUDE_CODE_OAUTH_TOKEN from systemd nightwatch-logintest.service"}},
			{"another batch's entry does not count", func(b *loginBox) {
				b.writeBatch("")
				write(t, filepath.Join(b.home, ".config", "systemd", "user", "nightwatch-other.service"),
					"[Service]\nExecStart=/opt/nightwatch run /elsewhere/other.yaml\nEnvironment=\"ANTHROPIC_API_KEY="+testAPIKey+"\"\n")
			}, Fail, []string{"not logged in"}},
			{"apiKeyHelper in settings", func(b *loginBox) {
				b.writeBatch("")
				helper := filepath.Join(b.home, "key-helper.sh")
				write(t, helper, "#!/bin/sh\necho "+testAPIKey+"\n")
				if err := os.Chmod(helper, 0o755); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(b.home, ".claude", "settings.json"), `{"apiKeyHelper": "`+helper+`"}`)
			}, OK, []string{"API key from apiKeyHelper"}},
		}
		if runtime.GOOS == "linux" {
			cases = append(cases,
				struct {
					name  string
					setup func(b *loginBox)
					level Level
					want  []string
				}{"interactive login in .credentials.json", func(b *loginBox) {
					b.writeBatch("")
					write(t, filepath.Join(b.home, ".claude", ".credentials.json"),
						`{"claudeAiOauth":{"accessToken":"`+testToken+`","refreshToken":"`+testToken+`-r","expiresAt":4102444800000,"scopes":["user:inference"],"subscriptionType":"max"}}`)
				}, OK, []string{"interactive max login in", ".credentials.json"}},
				struct {
					name  string
					setup func(b *loginBox)
					level Level
					want  []string
				}{"expired login without refresh token", func(b *loginBox) {
					b.writeBatch("")
					write(t, filepath.Join(b.home, ".claude", ".credentials.json"),
						`{"claudeAiOauth":{"accessToken":"`+testToken+`","expiresAt":1000,"scopes":["user:inference"],"subscriptionType":"pro"}}`)
				}, Fail, []string{"expired and it has no refresh token"}},
			)
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				b := newLoginBox(t, bin)
				c.setup(b)
				got := mustFind(t, b.run(), "agent-login", c.level, c.want...)
				if c.level == Fail && !strings.Contains(got.Fix, "claude setup-token") {
					t.Errorf("fix does not explain setup-token: %s", got.Fix)
				}
			})
		}
	})
}

// A claude that is not the real one (or a broken install) is reported, not
// trusted.
func TestAgentLoginUnreadableStatus(t *testing.T) {
	home := t.TempDir()
	fake := filepath.Join(home, "claude")
	write(t, fake, "#!/bin/sh\necho 'Unknown command: auth'\nexit 1\n")
	if err := os.Chmod(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	b := newLoginBox(t, fake)
	b.home = home
	mustFind(t, b.run(), "agent-login", Warn, "auth status", "not auth status JSON")
}

// doctor prints through the redactor: the login fix must read the same
// after it, not "CLAUDE_CODE_OAUTH_TOKEN=[REDACTED] token>".
func TestAgentLoginFixSurvivesRedaction(t *testing.T) {
	if got := redact.String(tokenFix); got != tokenFix {
		t.Errorf("the login fix is mangled by redaction:\n%s\nwant:\n%s", got, tokenFix)
	}
	for _, name := range []string{"CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "claude setup-token"} {
		if !strings.Contains(tokenFix, name) {
			t.Errorf("the login fix does not name %s", name)
		}
	}
}
