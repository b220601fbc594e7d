package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/jobs"
)

func TestAllowedToolsPerJob(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "claude")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "n.yaml")
	yaml := "version: 1\nname: n\nagent: {command: " + agent + "}\nservers:\n  web: {type: http, url: \"http://127.0.0.1:9/mcp\"}\n  files: {type: http, url: \"http://127.0.0.1:9/mcp\"}\n" +
		"jobs:\n  - {name: a, prompt: hi, servers: [web, files]}\n  - {name: b, prompt: hi, servers: [web, files], allowed_tools: [mcp__web__echo]}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := jobs.Load(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	checks := (&env{batch: b}).allowedTools(context.Background())
	if len(checks) != 2 {
		t.Fatalf("%d checks, want one per job: %+v", len(checks), checks)
	}
	if c := checks[0]; c.Level != OK || !strings.Contains(c.Detail, "job a: the session is allowed mcp__web, mcp__files (from its servers)") {
		t.Errorf("a: %+v", c)
	}
	if c := checks[1]; c.Level != Warn || !strings.Contains(c.Detail, "no rule allows a tool of files") || !strings.Contains(c.Fix, "mcp__files") {
		t.Errorf("b: %+v", c)
	}
}
