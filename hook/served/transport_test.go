package served

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/jobs"
)

// TestServedHookVersion: only a CLI known to honour onFailure "block" on
// an http hook gets the served hook.
func TestServedHookVersion(t *testing.T) {
	for _, tt := range []struct {
		v  string
		ok bool
	}{{"", false}, {"2.1.197", false}, {"2.1.331", false}, {"2.1.332", true}, {"2.2.0", true}, {"3.0.0", true}} {
		if why := versionWhy(tt.v); (why == "") != tt.ok {
			t.Errorf("%q: %q", tt.v, why)
		}
	}
}

// TestURLRefused: allowedHttpHookUrls in any file that applies (managed,
// a drop-in, the user's, a job's project) keeps the command hook unless a
// pattern is sure to allow every session's URL; a file that names the key
// but cannot be parsed counts as refusing; files without the key, or
// missing, do not.
func TestURLRefused(t *testing.T) {
	const url0, url1 = "http://127.0.0.1:41234/hook/00000000000000000000000000000000", "http://127.0.0.1:41234/hook/ffffffffffffffffffffffffffffffff"
	tests := []struct {
		name, file, content string
		refused             bool
	}{
		{"nothing", "", "", false},
		{"a settings file without the key", "home/.claude/settings.json", `{"permissions":{"deny":["Bash"]}}`, false},
		{"managed, empty list", "managed/managed-settings.json", `{"allowedHttpHookUrls":[]}`, true},
		{"managed drop-in, other hosts", "managed/managed-settings.d/10-hooks.json", `{"allowedHttpHookUrls":["https://hooks.example.com/*"]}`, true},
		{"user, loopback any port", "home/.claude/settings.json", `{"allowedHttpHookUrls":["http://127.0.0.1:*"]}`, false},
		{"project, this port only for one key", "work/.claude/settings.local.json", `{"allowedHttpHookUrls":["http://127.0.0.1:41234/hook/0*"]}`, true},
		{"project, everything", "work/.claude/settings.json", `{"allowedHttpHookUrls":["*"]}`, false},
		{"names the key, not JSON", "managed/managed-settings.json", `{"allowedHttpHookUrls":[`, true},
		{"the key, null", "home/.claude/settings.json", `{"allowedHttpHookUrls":null}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				p := filepath.Join(dir, tt.file)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			site := Site{Env: []string{"HOME=" + filepath.Join(dir, "home")}, ManagedDir: filepath.Join(dir, "managed"),
				Cwds: []string{filepath.Join(dir, "work")}}
			why := site.urlRefused(url0, url1)
			if (why != "") != tt.refused {
				t.Fatalf("refused = %q, want refused %v", why, tt.refused)
			}
			if why != "" && !strings.Contains(why, filepath.Join(dir, tt.file)) {
				t.Errorf("the reason does not name the file: %q", why)
			}
		})
	}
}

// TestStartForFallsBack: hook_transport command starts nothing and
// asks the CLI nothing; an agent whose version cannot be read keeps the
// command hook and the night says why.
func TestStartForFallsBack(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in agent is a shell script")
	}
	dir := t.TempDir()
	agent := filepath.Join(dir, "claude")
	marker := filepath.Join(dir, "asked")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\necho asked >> '"+marker+"'\necho 'not a version'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		transport jobs.HookTransport
		asked     bool
		note      string
	}{
		{jobs.HookCommand, false, ""},
		{jobs.HookAuto, true, "the agent's version is unknown"},
		{jobs.HookHTTP, true, "the agent's version is unknown"},
	} {
		t.Run(string(tt.transport), func(t *testing.T) {
			_ = os.Remove(marker)
			b := &jobs.Batch{HookTransport: tt.transport, Agent: jobs.Agent{Command: agent}}
			var notes []string
			srv := StartFor(context.Background(), b, Site{Env: []string{"PATH=/usr/bin:/bin"}, ManagedDir: dir}, nil,
				func(msg string, _ bool) { notes = append(notes, msg) })
			if srv != nil {
				_ = srv.Close()
				t.Fatal("a served hook was started")
			}
			_, err := os.Stat(marker)
			if asked := err == nil; asked != tt.asked {
				t.Errorf("the agent was asked its version: %v, want %v", asked, tt.asked)
			}
			if got := strings.Join(notes, "\n"); !strings.Contains(got, tt.note) || (tt.note == "") != (got == "") {
				t.Errorf("notes %q, want %q", got, tt.note)
			}
		})
	}
}
