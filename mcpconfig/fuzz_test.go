package mcpconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func FuzzResolveFile(f *testing.F) {
	seeds := []string{
		``,
		`{}`,
		`null`,
		`[]`,
		`{"mcpServers": null}`,
		`{"mcpServers": []}`,
		`{"mcpServers": {"a": {"command": "x", "args": ["${A}"], "env": {"K": "${B:-d}"}}}}`,
		`{"mcpServers": {"h": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"A": "b"}}}}`,
		`{"mcpServers": {"u": {"url": "http://x"}, "s": {"type": "sse"}, "n": 5, "d": {"command": 1}}}`,
		`{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`,
		`{"projects": {"/p": {"mcpServers": {"l": {"command": "x"}}}}, "mcpServers": {"u": {"command": "y"}}}`,
		`{"projects": [], "mcpServers": {"u": {"command": "y"}}}`,
		"{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}",
		`{"mcpServers": {"a": {"command": "x"`,
		"\xff\xfe{}",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	// The fuzz function runs sequentially within a worker process, so one
	// directory per process is enough and keeps iterations cheap.
	home := f.TempDir()
	configPath := filepath.Join(home, ".claude.json")
	getenv := envOf(map[string]string{"A": "a", "HOST": "h"})

	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(configPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// As an explicit file, and as ~/.claude.json with a matching project.
		for _, opts := range []Options{
			{Explicit: []string{configPath}, Getenv: getenv},
			{Home: home, Cwd: "/p", Getenv: getenv},
		} {
			r := Resolve(opts)
			if r == nil || r.Servers == nil {
				t.Fatal("nil result")
			}
			if !json.Valid(data) && len(r.Problems) == 0 {
				t.Fatalf("invalid JSON %q gave no problem", data)
			}
			if len(r.Names) != len(r.Servers) {
				t.Fatalf("names %v vs %d servers", r.Names, len(r.Servers))
			}
			for _, p := range r.Problems {
				if p.Path == "" || p.Err == nil || !strings.Contains(p.Message, p.Path) {
					t.Fatalf("problem lacks path or error: %+v", p)
				}
			}
			for _, name := range r.Names {
				srv := r.Servers[name]
				if srv == nil || srv.Name != name || srv.Source != configPath {
					t.Fatalf("server %q = %+v", name, srv)
				}
				switch srv.Transport {
				case Stdio:
					if srv.Command == "" {
						t.Fatalf("stdio server %q without command", name)
					}
				case HTTP, SSE, WS:
					if srv.URL == "" {
						t.Fatalf("remote server %q without url", name)
					}
				default:
					t.Fatalf("server %q has transport %q", name, srv.Transport)
				}
				if r.Lookup(name) != srv {
					t.Fatalf("Lookup(%q) did not find the winner", name)
				}
			}
		}
	})
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{
		"", "plain", "${A}", "${A:-d}", "pre-${A}-post", "${UNSET}", "$A", "~/x",
		"${", "${A", "${}", "${A${B}}", "${UNSET:-${B}}", "${EMPTY:-x}", "}${", "$${A}}",
	} {
		f.Add(s)
	}
	getenv := envOf(map[string]string{"A": "alpha", "B": "", "EMPTY": ""})
	f.Fuzz(func(t *testing.T, s string) {
		out, missing := Expand(s, getenv)
		if !strings.Contains(s, "$") && out != s {
			t.Fatalf("Expand(%q) = %q without any '$'", s, out)
		}
		for _, name := range missing {
			if !strings.Contains(s, "${"+name+"}") {
				t.Fatalf("Expand(%q): missing %q is not a ${%s} in the input", s, name, name)
			}
			if !strings.Contains(out, "${"+name+"}") {
				t.Fatalf("Expand(%q) = %q: missing %q not left literal", s, out, name)
			}
		}
		// With no variables set and no defaults, nothing may change.
		if !strings.Contains(s, ":-") {
			if empty, _ := Expand(s, nil); empty != s {
				t.Fatalf("Expand(%q, nil) = %q", s, empty)
			}
		}
		// Everything set: nothing can be missing.
		if _, m := Expand(s, func(string) (string, bool) { return "v", true }); len(m) != 0 {
			t.Fatalf("Expand(%q) with all set reports missing %q", s, m)
		}
	})
}
