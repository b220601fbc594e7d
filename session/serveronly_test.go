package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/secrets"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// TestServerOnly is the selection of what stays out of the CLI's
// environment (issue 21): a server's variables go, unless the job keeps
// them, they are base variables or the CLI reads them itself; a secret
// under another name with the same value goes with them.
func TestServerOnly(t *testing.T) {
	alpha := sessionTestStdio("alpha", "/bin/alpha")
	alpha.Vars = []string{"ALPHA_KEY", "GITHUB_TOKEN", "HOME", "REGION"}
	web := sessionTestStdio("web", "/bin/web")
	web.Vars = []string{"ANTHROPIC_API_KEY", "HTTPS_PROXY", "WEB_URL", "AWS_SECRET_ACCESS_KEY", "UNSET_ONE"}
	base := []string{"PATH=/bin", "HOME=/home/u", "ALPHA_KEY=alpha-secret", "GITHUB_TOKEN=gh-secret",
		"GH_PAT_TOKEN=gh-secret", "GH_MIRROR=gh-secret", "REGION=eu", "REGION_TOKEN=eu", "WEB_URL=https://x/s/abc123/mcp",
		"ANTHROPIC_API_KEY=k", "HTTPS_PROXY=http://proxy:3128", "AWS_SECRET_ACCESS_KEY=aws-secret", "PLAIN=p"}
	tests := []struct {
		name    string
		servers []*jobs.Server
		keep    []string
		env     []string
		want    []string
	}{
		{name: "no server uses a variable", servers: []*jobs.Server{sessionTestStdio("x", "/bin/x")}, env: base},
		{name: "every server's variables go, whichever job runs",
			servers: []*jobs.Server{alpha, web}, env: base,
			// GH_PAT_TOKEN: a secret's name with GITHUB_TOKEN's value (GH_MIRROR
			// is no secret's name; REGION_TOKEN's value "eu" is too short).
			want: []string{"ALPHA_KEY", "AWS_SECRET_ACCESS_KEY", "GH_PAT_TOKEN", "GITHUB_TOKEN", "REGION", "WEB_URL"}},
		{name: "session_env keeps one, and its aliases with it",
			servers: []*jobs.Server{alpha, web}, keep: []string{"GITHUB_TOKEN", "WEB_URL"}, env: base,
			want: []string{"ALPHA_KEY", "AWS_SECRET_ACCESS_KEY", "REGION"}},
		{name: "on Bedrock the CLI keeps AWS's credentials",
			servers: []*jobs.Server{web}, env: append(slices.Clone(base), "CLAUDE_CODE_USE_BEDROCK=1"),
			want: []string{"WEB_URL"}},
		{name: "a Bedrock switch that is off is off",
			servers: []*jobs.Server{web}, env: append(slices.Clone(base), "CLAUDE_CODE_USE_BEDROCK=0"),
			want: []string{"AWS_SECRET_ACCESS_KEY", "WEB_URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := sessionTestBatch(t, tt.servers...)
			job := sessionTestJob("j", "hi")
			job.SessionEnv = tt.keep
			if got := serverOnly(b, job, tt.env); !slices.Equal(got, tt.want) {
				t.Errorf("serverOnly = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCommandEnvironLeavesOutServerVariables: the CLI's environment,
// built from the batch's env_file and env, holds no variable only a
// server uses, and still holds what the job keeps and what nightwatch's
// hook needs.
func TestCommandEnvironLeavesOutServerVariables(t *testing.T) {
	notes := sessionTestStdio("notes", "/bin/notes")
	notes.Vars = []string{"NOTES_KEY", "SHARED_TOKEN"}
	notes.MCP.Env = map[string]string{"NOTES_KEY": "notes-secret", "SHARED_TOKEN": "shared-secret"}
	web := sessionTestStdio("web", "/bin/web")
	web.Vars = []string{"WEB_KEY"}
	b := sessionTestBatch(t, notes, web)
	b.Env = map[string]string{"NOTES_KEY": "notes-secret", "SHARED_TOKEN": "shared-secret", "WEB_KEY": "web-secret", "PLAIN": "p"}
	b.EnvFileKeys = []string{"NOTES_KEY", "SHARED_TOKEN", "WEB_KEY", "PLAIN"}
	job := sessionTestJob("j", "hi", "notes")
	job.SessionEnv = []string{"SHARED_TOKEN"}
	spec := sessionTestSpec(b, job, "PATH=/bin", "ANTHROPIC_API_KEY=k")
	cmd := Command(context.Background(), spec, Files{Dir: "/state/runs/r/j/1", Settings: "/s", MCPConfig: "/m"})
	env := strings.Join(cmd.Env, "\n")
	for _, secret := range []string{"notes-secret", "web-secret"} {
		if strings.Contains(env, secret) {
			t.Errorf("the CLI's environment holds %q:\n%s", secret, env)
		}
	}
	for _, kv := range []string{"SHARED_TOKEN=shared-secret", "PLAIN=p", "ANTHROPIC_API_KEY=k", "PATH=/bin"} {
		if !slices.Contains(cmd.Env, kv) {
			t.Errorf("the CLI's environment lacks %s:\n%s", kv, env)
		}
	}
	// The hook and exec-servers find the values left out in the
	// attempt's owner-only file, named by a path.
	if v, _ := lookup(cmd.Env, secrets.FileVariable); v != filepath.Join("/state/runs/r/j/1", statedir.AttemptSecrets) {
		t.Errorf("%s = %q", secrets.FileVariable, v)
	}
	f, err := Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.Dir, statedir.AttemptSecrets)
	data, err := os.ReadFile(path)
	if fi, serr := os.Stat(path); err != nil || serr != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets file: %v %v", err, serr)
	}
	if got := string(data); !strings.Contains(got, "NOTES_KEY=notes-secret") || !strings.Contains(got, "WEB_KEY=web-secret") ||
		strings.Contains(got, "shared-secret") || strings.Contains(got, "PLAIN") {
		t.Errorf("secrets file = %s", got)
	}
	// The server still gets its own from the MCP config.
	cfg, err := launchConfig("/bin/nightwatch", b, job, Environ(b, spec.Env))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), `"NOTES_KEY": "notes-secret"`) {
		t.Errorf("the MCP config lacks notes' own key:\n%s", cfg)
	}
	// And the dry run says what was left out, by name.
	p, err := DryRun(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.ServersOnly, []string{"NOTES_KEY", "WEB_KEY"}) || slices.Contains(p.EnvNames, "NOTES_KEY") {
		t.Errorf("dry run: serversOnly %q, env %q", p.ServersOnly, p.EnvNames)
	}
}
