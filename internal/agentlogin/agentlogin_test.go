package agentlogin

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	home := t.TempDir()
	expired := filepath.Join(home, "cfg")
	if err := os.MkdirAll(expired, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(expired, ".credentials.json"), []byte(`{"claudeAiOauth":{"expiresAt":1000}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		st    Status
		where Where
		level Level
		want  string
	}{
		{"not logged in", Status{}, Where{GOOS: "linux", Home: home}, Fail, "not logged in from the night"},
		{"api key", Status{LoggedIn: true, AuthMethod: "api_key", APIKeySource: "ANTHROPIC_API_KEY"}, Where{GOOS: "linux"}, OK, "API key from ANTHROPIC_API_KEY"},
		{"long-lived token", Status{LoggedIn: true, AuthMethod: "oauth_token"}, Where{GOOS: "linux"}, OK, "CLAUDE_CODE_OAUTH_TOKEN"},
		{"keychain under launchd", Status{LoggedIn: true, AuthMethod: "claude.ai"}, Where{GOOS: "darwin"}, Warn, "Keychain"},
		{"stored login", Status{LoggedIn: true, AuthMethod: "claude.ai", SubscriptionType: "max"}, Where{GOOS: "linux", Home: home}, OK, "interactive max login"},
		{"expired, no refresh", Status{LoggedIn: true, AuthMethod: "claude.ai"}, Where{GOOS: "linux", Home: home, ConfigDir: expired, Now: time.Now()}, Fail, "no refresh token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.st, "the night's environment", tt.where)
			if v.Level != tt.level || !strings.Contains(v.Detail, tt.want) {
				t.Errorf("got %s %q, want %s containing %q", v.Level, v.Detail, tt.level, tt.want)
			}
			if v.Level != OK && !strings.Contains(v.Fix, "setup-token") {
				t.Errorf("fix %q does not say how to get a token for launchd/cron", v.Fix)
			}
		})
	}
}

// Query runs the CLI with exactly the environment given: a script
// standing in for claude answers as the CLI does.
func TestQuery(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands in for claude")
	}
	bin := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\nif [ -n \"$ANTHROPIC_API_KEY\" ]; then echo '{\"loggedIn\":true,\"authMethod\":\"api_key\"}'; exit 0; fi\necho '{\"loggedIn\":false,\"authMethod\":\"none\"}'; exit 1\n"
	if err := os.WriteFile(bin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := Query(context.Background(), bin, "", []string{"PATH=/usr/bin:/bin"}, 0)
	if err != nil || st.LoggedIn {
		t.Fatalf("without a key: %+v, %v", st, err)
	}
	st, err = Query(context.Background(), bin, "", []string{"PATH=/usr/bin:/bin", "ANTHROPIC_API_KEY=k"}, 0)
	if err != nil || !st.LoggedIn || st.AuthMethod != "api_key" {
		t.Fatalf("with a key: %+v, %v", st, err)
	}
}

// An agent that answers `auth status` with some other JSON (a stand-in
// that prints a result whatever it is asked) says nothing of the login:
// an error, not "logged out".
func TestQueryNotAuthStatus(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands in for claude")
	}
	bin := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\necho '{\"type\":\"result\",\"subtype\":\"success\",\"session_id\":\"s\"}'\n"
	if err := os.WriteFile(bin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	if st, err := Query(context.Background(), bin, "", []string{"PATH=/usr/bin:/bin"}, 0); err == nil {
		t.Fatalf("a result line read as a login: %+v", st)
	}
}
