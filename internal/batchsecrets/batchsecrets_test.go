package batchsecrets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/secrets"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// A loaded batch's secrets are removed from every later redact.String:
// env_file values whatever their names, sensitive env values, server env
// and header values, URL path secrets and the webhook's token; settings
// (LOG_LEVEL=info, LANG, PATH) stay readable.
func TestRememberBatch(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("night.env", "PLAIN_DSN=plainDsnQ1w2E3r4\nLOG_LEVEL=info\nLANG=C.UTF-8\nPATH=/usr/bin:/bin\nDB_PASSWORD=pw12\n")
	write("night.yaml", `version: 1
name: s
state_dir: ./state
env_file: ./night.env
env: {SEARCH_TOKEN: searchTokA5s6D7f8, MODE: nightly-mode-x}
notify: {webhook: "https://hooks.example/services/hookSecretZ9x8C7v6"}
servers:
  notes: {command: /bin/cat, env: {NOTES_CFG: notesCfgG1h2J3k4}}
  web: {type: http, url: "https://mcp.example/api/mcp/s/urlSecretM5n6B7v8/mcp", headers: {X-Key: headerValL9k8J7h6}}
jobs:
  - {name: j, prompt: hi, servers: [notes, web]}
`)
	b, err := jobs.LoadWith(filepath.Join(dir, "night.yaml"), func(string) (string, bool) { return "", false }, jobs.LoadOptions{AgentOptional: true})
	if err != nil {
		t.Fatal(err)
	}
	RememberBatch(b)
	secrets := []string{"plainDsnQ1w2E3r4", "pw12", "searchTokA5s6D7f8", "notesCfgG1h2J3k4", "urlSecretM5n6B7v8", "headerValL9k8J7h6", "hookSecretZ9x8C7v6"}
	text := strings.Join(secrets, " | ") + " | level info, C.UTF-8, /usr/bin:/bin, nightly-mode-x"
	got := redact.String(text)
	for _, s := range secrets {
		if strings.Contains(got, s) {
			t.Errorf("%q not removed: %s", s, got)
		}
	}
	if !strings.HasSuffix(got, " | level info, C.UTF-8, /usr/bin:/bin, nightly-mode-x") {
		t.Errorf("settings were redacted too: %s", got)
	}
}

// The session's environment names the batch's env_file variables (never
// their values, never a base variable), and a process started with it
// remembers their values by RememberBatch's rule.
func TestEnvFileNamesReachTheHook(t *testing.T) {
	b := &jobs.Batch{EnvFileKeys: []string{"REGION_STORE_PATH", "PATH", "LOG_LEVEL", "GONE"},
		Env: map[string]string{"REGION_STORE_PATH": "regionZ1x2C3v4B5", "PATH": "/usr/bin", "LOG_LEVEL": "info"}}
	if got, want := EnvFileNames(b), "REGION_STORE_PATH,LOG_LEVEL"; got != want {
		t.Fatalf("EnvFileNames = %q, want %q", got, want)
	}
	// The hook's process: the session's environment, remembered at start.
	t.Setenv(secrets.NamesVariable, "REGION_STORE_PATH,LOG_LEVEL,PATH")
	t.Setenv("REGION_STORE_PATH", "regionZ1x2C3v4B5")
	t.Setenv("LOG_LEVEL", "info")
	t.Setenv("PATH", "/usr/local/bin")
	secrets.RememberProcess()
	got := redact.String("store regionZ1x2C3v4B5 at level info in /usr/local/bin")
	if want := "store [REDACTED] at level info in /usr/local/bin"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
