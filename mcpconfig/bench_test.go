package mcpconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkResolveLargeClaudeJSON measures the hook's cache-miss path with
// a ~/.claude.json the size of a long-lived install: hundreds of projects,
// each with prompt history, and a few servers.
func BenchmarkResolveLargeClaudeJSON(b *testing.B) {
	root := b.TempDir()
	home := filepath.Join(root, "home")
	cwd := filepath.Join(root, "src", "project-150", "sub")
	if err := os.MkdirAll(home, 0o755); err != nil {
		b.Fatal(err)
	}
	data := largeClaudeJSON(filepath.Join(root, "src"), 300)
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("~/.claude.json: %d KB, 300 projects", len(data)/1024)

	opts := Options{Home: home, Cwd: cwd, Getenv: envOf(map[string]string{"TOKEN": "t"})}
	b.Run("Resolve", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			r := Resolve(opts)
			if r.Servers["local-150"] == nil || r.Servers["user-0"] == nil {
				b.Fatalf("names = %v problems = %v", r.Names, r.Problems)
			}
		}
	})
	// The floor: reading the file and one validating pass over it, which
	// any JSON decoder has to do. Resolve should stay within a small factor.
	b.Run("ReadAndValidateOnly", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			raw, err := os.ReadFile(filepath.Join(home, ".claude.json"))
			if err != nil || !json.Valid(raw) {
				b.Fatal("invalid", err)
			}
		}
	})
}

func largeClaudeJSON(projectRoot string, projects int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"numStartups": 412, "theme": "dark", "mcpServers": {`)
	for i := range 5 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `"user-%d": {"type": "http", "url": "https://mcp%d.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}`, i, i)
	}
	sb.WriteString(`}, "projects": {`)
	for p := range projects {
		if p > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `%q: {"allowedTools": ["Bash(go test:*)"], "history": [`, filepath.Join(projectRoot, fmt.Sprintf("project-%d", p)))
		for h := range 11 {
			if h > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, `{"display": "run the nightly batch for item %d and summarise the failures in the report, then open a PR", "pastedContents": {}}`, h)
		}
		fmt.Fprintf(&sb, `], "mcpServers": {"local-%d": {"command": "node", "args": ["/opt/mcp/server-%d.js"], "env": {"K": "v"}}}, "lastCost": 1.25, "lastSessionId": "0b5c6f3e-%08d"}`, p, p, p)
	}
	sb.WriteString(`}}`)
	return []byte(sb.String())
}
