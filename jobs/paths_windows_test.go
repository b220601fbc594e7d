//go:build windows

package jobs

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadWindowsCommands: a bare name is found through PATHEXT (npx is
// npx.cmd), a path written with backslashes is a path (relative to the
// batch file), and prompt files resolve the same way.
func TestLoadWindowsCommands(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	writeFile(t, bin, "npx.cmd", "@echo off\r\n")
	writeFile(t, bin, "claude.exe", "")
	writeFile(t, dir, `tools\server.exe`, "")
	writeFile(t, dir, `prompts\a.md`, "say hi")
	file := writeFile(t, dir, "night.yaml", `version: 1
name: nightly
agent: {command: claude}
servers:
  mem: {command: npx, args: ["-y", "@modelcontextprotocol/server-memory"]}
  local: {command: '.\tools\server'}
jobs:
  - {name: only, prompt_file: '.\prompts\a.md', servers: [mem, local]}
`)
	b, err := LoadWith(file, environ(map[string]string{"PATH": bin, "PATHEXT": ".COM;.EXE;.BAT;.CMD"}), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, s := range b.Servers {
		byName[s.Name] = s.MCP.Command
	}
	if !strings.EqualFold(byName["mem"], filepath.Join(bin, "npx.cmd")) {
		t.Errorf("npx resolved to %q", byName["mem"])
	}
	if !strings.EqualFold(byName["local"], filepath.Join(dir, "tools", "server")) {
		t.Errorf(`.\tools\server resolved to %q`, byName["local"])
	}
	if !strings.EqualFold(b.Agent.Command, filepath.Join(bin, "claude.exe")) {
		t.Errorf("claude resolved to %q", b.Agent.Command)
	}
}
