package supervisor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/hook/served"
	"github.com/nightwatch-dev/nightwatch/internal/clirange"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// TestNightServedHook: on Claude Code 2.1.332 the night serves its
// sessions' hook over loopback HTTP (hook/served); on 2.1.197, which fails
// open when an http hook cannot be reached, the sessions keep the command
// hook. Either way the hook decides the same: the HTTP server dies under
// the first call (one failure opens it here), and the second call to it is
// blocked with nightwatch's reason, which the model reads. Which path ran
// is proven twice: the settings file the agent was given (type http with
// the token header and onFailure "block", removed with the session, or
// the command), and the hook processes
// that ran (every nightwatch and nightwatch-hook process appends its peak
// memory to NIGHTWATCH_REPORT_PEAK_RSS on exit: none on 2.1.332).
func TestNightServedHook(t *testing.T) {
	testkit.ForEachClaude(t, testNightServedHook)
}

func testNightServedHook(t *testing.T, version string) {
	f := newNightFixture(t)
	rss := filepath.Join(f.dir, "hook-processes")
	// The agent keeps a copy of the settings it is given: a served hook's
	// settings hold the token and are removed when the session ends.
	seen := filepath.Join(f.dir, "settings-seen.json")
	agent := filepath.Join(f.dir, "agent.sh")
	script := `#!/bin/sh
for a in "$@"; do if [ "$prev" = --settings ]; then cp -p "$a" ` + text.ShellQuote(seen) + `; fi; prev=$a; done
exec ` + text.ShellQuote(testkit.ClaudeBinOf(t, version)) + ` "$@"
`
	if err := os.WriteFile(agent, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	f.env = append(f.env, "NIGHTWATCH_REPORT_PEAK_RSS="+rss)
	web := startHTTPTestServer(t, testkit.BuildTestServer(t))
	b := f.load(fmt.Sprintf(`version: 1
name: served
state_dir: ./state
agent: {command: %s}
defaults: {timeout: 3m, stall_timeout: 2m, retries: 0}
health: {ttl: 2m, backoff: 5m, max_backoff: 10m, failure_threshold: 1, max_hold: 0s}
servers:
  web: {type: http, url: %s}
jobs:
  - {name: j1, servers: [web], allowed_tools: [mcp__web], on_unhealthy: run, prompt: %s}
`, jsonString(agent), jsonString(web),
		jsonString(prompt("j1", `mcp__web__die {}`, `mcp__web__echo {"message":"after the death"}`))))

	s := f.runWith(b, 0)
	results := f.api.SessionToolResults("j1")
	if len(results) != 2 || !results[1].IsError || !strings.Contains(results[1].Content, `nightwatch: MCP server "web" is`) {
		t.Fatalf("the call after the death was not blocked by nightwatch: %+v (jobs %+v)", results, s.Jobs)
	}

	data, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the agent was given no settings file: %v", err)
	}
	left, _ := filepath.Glob(statedir.Settings(b.StateDir, s.RunID, "*"))
	var settings struct {
		Hooks map[string][]struct {
			Hooks []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &settings); err != nil {
		t.Fatal(err)
	}
	pre := settings.Hooks["PreToolUse"][0].Hooks[0]
	processes, _ := os.ReadFile(rss)
	ran := strings.Count(string(processes), "\n")
	served := clirange.Compare(version, served.Since) >= 0
	if served {
		headers, _ := pre["headers"].(map[string]any)
		url, _ := pre["url"].(string)
		if pre["type"] != "http" || !strings.HasPrefix(url, "http://127.0.0.1:") || headers["X-Nightwatch-Token"] == nil || pre["onFailure"] != "block" {
			t.Errorf("PreToolUse hook on %s: %v", version, pre)
		}
		if post := settings.Hooks["PostToolUseFailure"][0].Hooks[0]; post["type"] != "http" {
			t.Errorf("PostToolUseFailure hook on %s: %v", version, post)
		}
		if ran != 0 {
			t.Errorf("%d hook processes ran on %s; the hook is served", ran, version)
		}
	} else {
		if pre["type"] != "command" || pre["url"] != nil {
			t.Errorf("PreToolUse hook on %s: %v", version, pre)
		}
		if ran == 0 {
			t.Errorf("no hook process ran on %s, which must keep the command hook", version)
		}
	}
	if served && len(left) > 0 {
		t.Errorf("the served hook's settings, which hold the token, outlived the session: %v", left)
	}
	if !served && len(left) != 1 {
		t.Errorf("settings files of the run: %v, want the command hook's one", left)
	}
	if fi, err := os.Stat(seen); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the settings file, which holds the token, is not owner-only: %v %v", fi.Mode(), err)
	}
	// The token is in the settings file only: never in the night's log.
	if served {
		headers, _ := pre["headers"].(map[string]any)
		token, _ := headers["X-Nightwatch-Token"].(string)
		logs, _ := filepath.Glob(filepath.Join(b.StateDir, "logs", "*"))
		for _, l := range logs {
			if data, _ := os.ReadFile(l); token != "" && strings.Contains(string(data), token) {
				t.Errorf("the token is in the log %s", l)
			}
		}
	}
}
