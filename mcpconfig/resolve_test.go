package mcpconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// layout is a home directory and a project below it, in a temp dir.
type layout struct {
	home, cwd string
}

func newLayout(t *testing.T) layout {
	t.Helper()
	root := t.TempDir()
	l := layout{home: filepath.Join(root, "home"), cwd: filepath.Join(root, "home", "src", "proj")}
	if err := os.MkdirAll(l.cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	return l
}

// The six searched files, in precedence order.
func (l layout) claudeJSON() string             { return filepath.Join(l.home, ".claude.json") }
func (l layout) mcpJSON() string                { return filepath.Join(l.cwd, ".mcp.json") }
func (l layout) settingsLocal() string          { return filepath.Join(l.cwd, ".claude", "settings.local.json") }
func (l layout) projectSettings() string        { return filepath.Join(l.cwd, ".claude", "settings.json") }
func (l layout) userSettings() string           { return filepath.Join(l.home, ".claude", "settings.json") }
func (l layout) options() Options               { return Options{Cwd: l.cwd, Home: l.home} }
func (l layout) resolve(t *testing.T) *Resolved { t.Helper(); return Resolve(l.options()) }

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(data))
}

// servers builds an {"mcpServers": {...}} document of stdio servers whose
// command records where they were defined.
func servers(where string, names ...string) map[string]any {
	m := map[string]any{}
	for _, n := range names {
		m[n] = map[string]any{"command": where + "-" + n}
	}
	return map[string]any{"mcpServers": m}
}

func noProblems(t *testing.T, r *Resolved) {
	t.Helper()
	for _, p := range r.Problems {
		t.Errorf("unexpected problem: %s", p.Message)
	}
}

func TestResolvePrecedence(t *testing.T) {
	type step struct {
		scope Scope
		file  func(layout) string
		write func(t *testing.T, l layout, doc map[string]any)
	}
	plain := func(file func(layout) string) func(*testing.T, layout, map[string]any) {
		return func(t *testing.T, l layout, doc map[string]any) { writeJSON(t, file(l), doc) }
	}
	// ~/.claude.json holds two sources; tests merge into it.
	claude := func(merge func(existing, doc map[string]any)) func(*testing.T, layout, map[string]any) {
		return func(t *testing.T, l layout, doc map[string]any) {
			existing := map[string]any{}
			if data, err := os.ReadFile(l.claudeJSON()); err == nil {
				if err := json.Unmarshal(data, &existing); err != nil {
					t.Fatal(err)
				}
			}
			merge(existing, doc)
			writeJSON(t, l.claudeJSON(), existing)
		}
	}
	steps := []step{
		{ScopeLocal, layout.claudeJSON, claude(func(existing, doc map[string]any) {
			existing["projects"] = map[string]any{"CWD": doc}
		})},
		{ScopeProject, layout.mcpJSON, plain(layout.mcpJSON)},
		{ScopeProjectLocal, layout.settingsLocal, plain(layout.settingsLocal)},
		{ScopeProjectShared, layout.projectSettings, plain(layout.projectSettings)},
		{ScopeUser, layout.claudeJSON, claude(func(existing, doc map[string]any) {
			existing["mcpServers"] = doc["mcpServers"]
		})},
		{ScopeUserSettings, layout.userSettings, plain(layout.userSettings)},
	}

	// For each starting point, sources first..6 all define "shared"; the
	// first of them must win and the rest be shadowed, in order.
	for first := range steps {
		t.Run(string(steps[first].scope), func(t *testing.T) {
			l := newLayout(t)
			for i := first; i < len(steps); i++ {
				s := steps[i]
				s.write(t, l, servers(string(s.scope), "shared", "only-"+string(s.scope)))
			}
			// The local-scope key is the cwd, known only now.
			if data, err := os.ReadFile(l.claudeJSON()); err == nil {
				writeFile(t, l.claudeJSON(), strings.ReplaceAll(string(data), `"CWD"`, fmt.Sprintf("%q", l.cwd)))
			}

			r := l.resolve(t)
			noProblems(t, r)

			winner := r.Lookup("shared")
			if winner == nil {
				t.Fatalf("shared not resolved; servers=%v", r.Names)
			}
			want := steps[first]
			if winner.Scope != want.scope || winner.Source != want.file(l) {
				t.Errorf("winner = %s %s, want %s %s", winner.Scope, winner.Source, want.scope, want.file(l))
			}
			if winner.Command != string(want.scope)+"-shared" {
				t.Errorf("winner command = %q", winner.Command)
			}
			var wantShadowed []Definition
			for _, s := range steps[first+1:] {
				wantShadowed = append(wantShadowed, Definition{Source: s.file(l), Scope: s.scope})
			}
			if !reflect.DeepEqual(r.Shadowed["shared"], wantShadowed) {
				t.Errorf("shadowed = %v\nwant %v", r.Shadowed["shared"], wantShadowed)
			}
			// Every source's own server is there, with its own source.
			for _, s := range steps[first:] {
				srv := r.Servers["only-"+string(s.scope)]
				if srv == nil || srv.Source != s.file(l) || srv.Scope != s.scope {
					t.Errorf("only-%s = %+v, want source %s", s.scope, srv, s.file(l))
				}
			}
			// json.Marshal writes "only-…" before "shared", and names follow
			// file order, then precedence order.
			var wantNames []string
			for i, s := range steps[first:] {
				wantNames = append(wantNames, "only-"+string(s.scope))
				if i == 0 {
					wantNames = append(wantNames, "shared")
				}
			}
			if !slices.Equal(r.Names, wantNames) {
				t.Errorf("names = %v, want %v", r.Names, wantNames)
			}
		})
	}
}

func TestResolveSearchedAndMissingFiles(t *testing.T) {
	l := newLayout(t)
	r := l.resolve(t)
	noProblems(t, r)
	want := []string{l.claudeJSON(), l.mcpJSON(), l.settingsLocal(), l.projectSettings(), l.userSettings()}
	if !slices.Equal(r.Searched, want) {
		t.Errorf("searched = %v\nwant %v", r.Searched, want)
	}
	if len(r.Servers) != 0 || r.Names != nil {
		t.Errorf("servers = %v", r.Names)
	}
}

func TestResolveCwdIsHome(t *testing.T) {
	// <cwd>/.claude/settings.json and ~/.claude/settings.json are the same
	// file: it must be read once, and not shadow itself.
	l := newLayout(t)
	l.cwd = l.home
	writeJSON(t, l.userSettings(), servers("s", "a"))
	r := l.resolve(t)
	noProblems(t, r)
	if srv := r.Servers["a"]; srv == nil || srv.Scope != ScopeProjectShared {
		t.Errorf("a = %+v, want project-settings scope", srv)
	}
	if len(r.Shadowed["a"]) != 0 {
		t.Errorf("shadowed = %v", r.Shadowed["a"])
	}
	if n := strings.Count(strings.Join(r.Searched, "\n"), l.userSettings()); n != 1 {
		t.Errorf("settings.json searched %d times: %v", n, r.Searched)
	}
}

func TestResolveNearestProjectKey(t *testing.T) {
	tests := []struct {
		name    string
		keys    []string // relative to the temp root
		cwd     string
		want    string // key whose server wins, "" for none
		comment string
	}{
		{name: "exact", keys: []string{"a", "a/b"}, cwd: "a/b", want: "a/b"},
		{name: "nearest ancestor", keys: []string{"a", "a/b", "a/b/c/d"}, cwd: "a/b/c", want: "a/b"},
		{name: "deep below", keys: []string{"a"}, cwd: "a/b/c/d/e", want: "a"},
		{name: "prefix is not ancestor", keys: []string{"a/pro"}, cwd: "a/proj", want: ""},
		{name: "trailing slash key", keys: []string{"a/b/"}, cwd: "a/b/c", want: "a/b/"},
		{name: "no key", keys: nil, cwd: "a", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			home := filepath.Join(root, "home")
			projects := map[string]any{}
			for _, k := range tt.keys {
				key := filepath.Join(root, k)
				if strings.HasSuffix(k, "/") {
					key += "/"
				}
				projects[key] = map[string]any{
					"history":    []any{map[string]any{"display": "x"}},
					"mcpServers": map[string]any{"s": map[string]any{"command": k}},
				}
			}
			writeJSON(t, filepath.Join(home, ".claude.json"), map[string]any{"projects": projects})

			r := Resolve(Options{Home: home, Cwd: filepath.Join(root, tt.cwd)})
			noProblems(t, r)
			srv := r.Servers["s"]
			switch {
			case tt.want == "" && srv != nil:
				t.Errorf("got server from %q, want none", srv.Command)
			case tt.want != "" && (srv == nil || srv.Command != tt.want):
				t.Errorf("got %+v, want command %q", srv, tt.want)
			case srv != nil && srv.Scope != ScopeLocal:
				t.Errorf("scope = %s", srv.Scope)
			}
		})
	}
}

func TestResolveExplicit(t *testing.T) {
	l := newLayout(t)
	writeJSON(t, l.claudeJSON(), servers("user", "a", "b"))
	writeJSON(t, l.mcpJSON(), servers("project", "a"))
	dir := t.TempDir()
	first := filepath.Join(dir, "first.json")
	second := filepath.Join(dir, "second.json")
	writeJSON(t, first, servers("first", "x"))
	writeJSON(t, second, servers("second", "x", "y"))

	opts := l.options()
	opts.Explicit = []string{first, second}
	r := Resolve(opts)
	noProblems(t, r)

	if !slices.Equal(r.Names, []string{"x", "y"}) {
		t.Errorf("names = %v, want only the explicit files' servers", r.Names)
	}
	if !slices.Equal(r.Searched, []string{first, second}) {
		t.Errorf("searched = %v", r.Searched)
	}
	if x := r.Servers["x"]; x.Command != "first-x" || x.Scope != ScopeExplicit || x.Source != first {
		t.Errorf("x = %+v", x)
	}
	if want := []Definition{{Source: second, Scope: ScopeExplicit}}; !reflect.DeepEqual(r.Shadowed["x"], want) {
		t.Errorf("shadowed = %v", r.Shadowed["x"])
	}
}

func TestResolveExplicitProblems(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	writeJSON(t, good, servers("good", "g"))
	broken := filepath.Join(dir, "broken.json")
	writeFile(t, broken, "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}\n")

	tests := []struct {
		name      string
		path      string
		wantParts []string
	}{
		{
			name:      "tilde typo",
			path:      filepath.Join(dir, "Users", "~", ".claude", "settings.json"),
			wantParts: []string{filepath.Join(dir, "Users", "~", ".claude", "settings.json"), "does not exist", `"~" is only expanded by a shell at the start of a path`},
		},
		{
			name:      "leading tilde not expanded",
			path:      "~/.claude/settings.json",
			wantParts: []string{"~/.claude/settings.json", `leading "~" was not expanded`},
		},
		{
			name:      "unexpanded variable",
			path:      filepath.Join(dir, "${NOPE}", "x.json"),
			wantParts: []string{"${NOPE}", "unexpanded variable"},
		},
		{
			name:      "plain missing",
			path:      filepath.Join(dir, "nope.json"),
			wantParts: []string{filepath.Join(dir, "nope.json"), "default locations are not searched"},
		},
		{
			name:      "broken json",
			path:      broken,
			wantParts: []string{broken, "line 3 column 26", "invalid character"},
		},
		{
			name:      "directory",
			path:      dir,
			wantParts: []string{dir},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Resolve(Options{Cwd: dir, Home: dir, Explicit: []string{tt.path, good}})
			if len(r.Problems) != 1 {
				t.Fatalf("problems = %+v, want 1", r.Problems)
			}
			p := r.Problems[0]
			if !p.Explicit || p.Err == nil || p.Error() != p.Message {
				t.Errorf("problem = %+v", p)
			}
			if !strings.Contains(p.Path, filepath.Base(tt.path)) {
				t.Errorf("path = %q", p.Path)
			}
			for _, part := range tt.wantParts {
				if !strings.Contains(p.Message, part) {
					t.Errorf("message %q\nlacks %q", p.Message, part)
				}
			}
			// The other explicit file still loads.
			if r.Servers["g"] == nil {
				t.Errorf("good file's server missing: %v", r.Names)
			}
		})
	}
}

func TestResolveBrokenSearchedFile(t *testing.T) {
	l := newLayout(t)
	writeFile(t, l.mcpJSON(), "{\n\t\"mcpServers\": {\n\t\t\"a\": {\"command\": \"x\"}\n\t}\n\t\"oops\": 1\n}")
	writeJSON(t, l.userSettings(), servers("user", "u"))
	r := l.resolve(t)
	if len(r.Problems) != 1 {
		t.Fatalf("problems = %+v", r.Problems)
	}
	p := r.Problems[0]
	if p.Path != l.mcpJSON() || p.Explicit {
		t.Errorf("problem = %+v", p)
	}
	for _, part := range []string{l.mcpJSON(), "line 5 column 2"} {
		if !strings.Contains(p.Message, part) {
			t.Errorf("message %q lacks %q", p.Message, part)
		}
	}
	if r.Servers["a"] != nil || r.Servers["u"] == nil {
		t.Errorf("names = %v, want only u", r.Names)
	}
}

func TestResolveWronglyTypedFields(t *testing.T) {
	l := newLayout(t)
	// "projects" of the wrong type must not hide the user-scope servers.
	writeFile(t, l.claudeJSON(), `{"projects": [], "mcpServers": {"u": {"command": "x"}}}`)
	writeFile(t, l.mcpJSON(), `{"mcpServers": ["not", "an", "object"]}`)
	writeFile(t, l.projectSettings(), `[1, 2]`)
	r := l.resolve(t)
	if r.Servers["u"] == nil {
		t.Errorf("user server lost: %v", r.Names)
	}
	want := map[string]string{
		l.claudeJSON():      "line 1 column 14",
		l.mcpJSON():         "mcpServers: must be an object",
		l.projectSettings(): "cannot unmarshal array",
	}
	if len(r.Problems) != len(want) {
		t.Errorf("problems = %+v", r.Problems)
	}
	for _, p := range r.Problems {
		if part, ok := want[p.Path]; !ok || !strings.Contains(p.Message, part) {
			t.Errorf("problem %q: want it to contain %q", p.Message, part)
		}
	}
}

func TestResolveLocalScopeNotAnObject(t *testing.T) {
	l := newLayout(t)
	writeJSON(t, l.claudeJSON(), map[string]any{
		"projects":   map[string]any{l.cwd: map[string]any{"mcpServers": "oops"}},
		"mcpServers": servers("user", "u")["mcpServers"],
	})
	r := l.resolve(t)
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0].Message, fmt.Sprintf("projects[%q].mcpServers", l.cwd)) {
		t.Errorf("problems = %+v", r.Problems)
	}
	if r.Servers["u"] == nil {
		t.Errorf("user server lost: %v", r.Names)
	}
}

func TestResolveUnreadableFile(t *testing.T) {
	l := newLayout(t)
	// A folder where the file should be cannot be read by anyone, root
	// included (CI runs as root, so a chmod 000 file would not do).
	if err := os.MkdirAll(l.mcpJSON(), 0o700); err != nil {
		t.Fatal(err)
	}
	r := l.resolve(t)
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0].Message, "read "+l.mcpJSON()) {
		t.Errorf("problems = %+v", r.Problems)
	}
}

func TestResolveDotClaudeIsAFile(t *testing.T) {
	l := newLayout(t)
	writeFile(t, filepath.Join(l.cwd, ".claude"), "not a directory")
	r := l.resolve(t)
	noProblems(t, r)
}

func TestResolveEntries(t *testing.T) {
	tests := []struct {
		name        string
		entry       string
		want        *Server // compared without Raw, Source, Scope
		wantDropped string
		wantProblem string
	}{
		{name: "stdio by command", entry: `{"command": "node", "args": ["s.js"], "env": {"K": "v"}}`,
			want: &Server{Transport: Stdio, Command: "node", Args: []string{"s.js"}, Env: map[string]string{"K": "v"}}},
		{name: "stdio explicit", entry: `{"type": "stdio", "command": "x"}`,
			want: &Server{Transport: Stdio, Command: "x"}},
		{name: "http", entry: `{"type": "http", "url": "http://h/mcp", "headers": {"A": "b"}}`,
			want: &Server{Transport: HTTP, URL: "http://h/mcp", Headers: map[string]string{"A": "b"}}},
		{name: "streamable-http alias", entry: `{"type": "streamable-http", "url": "http://h/mcp"}`,
			want: &Server{Transport: HTTP, URL: "http://h/mcp"}},
		{name: "sse", entry: `{"type": "sse", "url": "http://h/sse"}`,
			want: &Server{Transport: SSE, URL: "http://h/sse"}},
		{name: "ws", entry: `{"type": "ws", "url": "ws://h"}`,
			want: &Server{Transport: WS, URL: "ws://h"}},
		{name: "unknown fields kept", entry: `{"command": "x", "timeout": 5000, "alwaysLoad": true}`,
			want: &Server{Transport: Stdio, Command: "x"}},
		{name: "fields of other transport ignored", entry: `{"command": "x", "headers": 5, "url": 1}`,
			want: &Server{Transport: Stdio, Command: "x"}},
		{name: "null args", entry: `{"command": "x", "args": null}`,
			want: &Server{Transport: Stdio, Command: "x"}},

		{name: "url without type", entry: `{"url": "http://h/mcp"}`, wantDropped: `"url" but no "type"`},
		{name: "http without url", entry: `{"type": "http"}`, wantDropped: `type "http" has no "url"`},
		{name: "sse without url", entry: `{"type": "sse", "headers": {}}`, wantDropped: `type "sse" has no "url"`},
		{name: "stdio without command", entry: `{"type": "stdio", "args": []}`, wantDropped: `type "stdio" has no "command"`},
		{name: "empty", entry: `{}`, wantDropped: `neither "command" nor "type"`},
		{name: "unknown type", entry: `{"type": "grpc", "url": "x"}`, wantDropped: `unknown type "grpc"`},

		{name: "not an object", entry: `"npx server"`, wantProblem: `server "s": entry must be a JSON object`},
		{name: "null entry", entry: `null`, wantProblem: `entry must be a JSON object`},
		{name: "args not array", entry: `{"command": "x", "args": "a b"}`, wantProblem: `server "s": field "args" must be an array of strings`},
		{name: "args not strings", entry: `{"command": "x", "args": [1]}`, wantProblem: `field "args" must be an array of strings`},
		{name: "env not map", entry: `{"command": "x", "env": ["A=b"]}`, wantProblem: `field "env" must be an object of string values`},
		{name: "env number value", entry: `{"command": "x", "env": {"PORT": 80}}`, wantProblem: `field "env" must be`},
		{name: "headers not map", entry: `{"type": "http", "url": "u", "headers": "A: b"}`, wantProblem: `field "headers" must be`},
		{name: "command not string", entry: `{"command": ["node"]}`, wantProblem: `field "command" must be a string`},
		{name: "type not string", entry: `{"type": 1}`, wantProblem: `field "type" must be a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "c.json")
			// "ok" must load whatever happens to "s" in the same file.
			writeFile(t, path, `{"mcpServers": {"s": `+tt.entry+`, "ok": {"command": "y"}}}`)
			r := Resolve(Options{Explicit: []string{path}})
			if r.Servers["ok"] == nil {
				t.Errorf("sibling server lost")
			}
			got := r.Servers["s"]

			if tt.wantProblem != "" {
				if len(r.Problems) != 1 || !strings.Contains(r.Problems[0].Message, tt.wantProblem) ||
					!strings.Contains(r.Problems[0].Message, path) {
					t.Errorf("problems = %+v, want one containing %q and the path", r.Problems, tt.wantProblem)
				}
				if got != nil {
					t.Errorf("broken entry became a server: %+v", got)
				}
				return
			}
			noProblems(t, r)
			if tt.wantDropped != "" {
				if reason := r.Dropped["s"]; !strings.Contains(reason, tt.wantDropped) || !strings.Contains(reason, path) {
					t.Errorf("dropped = %q, want it to contain %q and the path", reason, tt.wantDropped)
				}
				if got != nil {
					t.Errorf("dropped entry became a server: %+v", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("no server; dropped=%v", r.Dropped)
			}
			if got.Source != path || got.Scope != ScopeExplicit || string(got.Raw) != tt.entry {
				t.Errorf("source=%q scope=%q raw=%s", got.Source, got.Scope, got.Raw)
			}
			tt.want.Name = "s"
			trimmed := *got
			trimmed.Source, trimmed.Scope, trimmed.Raw = "", "", nil
			if !reflect.DeepEqual(&trimmed, tt.want) {
				t.Errorf("got  %+v\nwant %+v", &trimmed, tt.want)
			}
		})
	}
}

func TestResolveDroppedDoesNotWin(t *testing.T) {
	l := newLayout(t)
	writeFile(t, l.mcpJSON(), `{"mcpServers": {"s": {"url": "http://h/mcp"}}}`)
	writeJSON(t, l.userSettings(), servers("user", "s"))
	r := l.resolve(t)
	noProblems(t, r)
	if srv := r.Servers["s"]; srv == nil || srv.Source != l.userSettings() {
		t.Errorf("s = %+v, want the user settings definition", srv)
	}
	if !strings.Contains(r.Dropped["s"], l.mcpJSON()) {
		t.Errorf("dropped = %v", r.Dropped)
	}
}

func TestResolveExpansion(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	writeFile(t, path, `{"mcpServers": {
		"stdio": {"command": "${BIN}/server", "args": ["--token=${TOKEN}", "${PORT:-8080}", "$HOME", "~/x"],
		          "env": {"A": "${UNSET_A}", "B": "${UNSET_B}-${UNSET_A}"}},
		"remote": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}", "X": "${UNSET_H}"}}
	}}`)
	env := map[string]string{"BIN": "/opt/bin", "TOKEN": "t0k", "HOST": "example.com", "HOME": "/home/u"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	r := Resolve(Options{Explicit: []string{path}, Getenv: getenv})
	noProblems(t, r)
	s := r.Servers["stdio"]
	if s.Command != "/opt/bin/server" || !slices.Equal(s.Args, []string{"--token=t0k", "8080", "$HOME", "~/x"}) {
		t.Errorf("stdio = %q %q", s.Command, s.Args)
	}
	if s.Env["A"] != "${UNSET_A}" || s.Env["B"] != "${UNSET_B}-${UNSET_A}" {
		t.Errorf("env = %v", s.Env)
	}
	if !slices.Equal(s.Missing, []string{"UNSET_A", "UNSET_B"}) {
		t.Errorf("missing = %v", s.Missing)
	}
	if !strings.Contains(string(s.Raw), "${BIN}") {
		t.Errorf("raw was expanded: %s", s.Raw)
	}
	h := r.Servers["remote"]
	if h.URL != "https://example.com/mcp" || h.Headers["Authorization"] != "Bearer t0k" {
		t.Errorf("remote = %q %v", h.URL, h.Headers)
	}
	if !slices.Equal(h.Missing, []string{"UNSET_H"}) {
		t.Errorf("missing = %v", h.Missing)
	}

	// nil Getenv is an empty environment: defaults apply, the rest is missing.
	r = Resolve(Options{Explicit: []string{path}})
	if s := r.Servers["stdio"]; s.Args[1] != "8080" || !slices.Contains(s.Missing, "BIN") {
		t.Errorf("nil getenv: args=%q missing=%v", s.Args, s.Missing)
	}
}

func TestResolveNamesFollowFileOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	writeFile(t, path, `{"mcpServers": {"zeta": {"command": "1"}, "alpha": {"command": "2"}, "mid": {"command": "3"}, "zeta": {"command": "4"}}}`)
	r := Resolve(Options{Explicit: []string{path}})
	noProblems(t, r)
	if !slices.Equal(r.Names, []string{"zeta", "alpha", "mid"}) {
		t.Errorf("names = %v", r.Names)
	}
	// A repeated key keeps the last value, as JSON.parse does.
	if r.Servers["zeta"].Command != "4" {
		t.Errorf("zeta = %q", r.Servers["zeta"].Command)
	}
}

func TestResolveRelativePaths(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	writeJSON(t, filepath.Join(dir, "proj", ".mcp.json"), servers("p", "a"))
	writeJSON(t, filepath.Join(dir, "x.json"), servers("x", "b"))

	r := Resolve(Options{Cwd: "proj", Home: filepath.Join(dir, "home")})
	if srv := r.Servers["a"]; srv == nil || srv.Source != filepath.Join(dir, "proj", ".mcp.json") {
		t.Errorf("a = %+v", srv)
	}
	r = Resolve(Options{Explicit: []string{"x.json"}})
	if srv := r.Servers["b"]; srv == nil || srv.Source != filepath.Join(dir, "x.json") {
		t.Errorf("b = %+v", srv)
	}
}

func TestResolveNeverNil(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // an empty Home falls back to $HOME
	r := Resolve(Options{})
	if r == nil || r.Servers == nil {
		t.Fatal("nil result")
	}
	if (*Resolved)(nil).Lookup("x") != nil {
		t.Error("nil Lookup")
	}
}

// TestResolveFollowsClaudeConfigDir: with CLAUDE_CONFIG_DIR, Claude Code
// reads .claude.json (user and local scopes) and settings.json from that
// folder, not from the home folder; so does the search.
func TestResolveFollowsClaudeConfigDir(t *testing.T) {
	l := newLayout(t)
	dir := filepath.Join(t.TempDir(), "claude-config")
	writeJSON(t, l.claudeJSON(), servers("home", "stale"))
	writeJSON(t, filepath.Join(dir, ".claude.json"), map[string]any{
		"mcpServers": servers("moved-user", "user")["mcpServers"],
		"projects":   map[string]any{l.cwd: servers("moved-local", "local")},
	})
	writeJSON(t, filepath.Join(dir, "settings.json"), servers("moved-settings", "settings"))
	opts := l.options()
	opts.ConfigDir = dir
	r := Resolve(opts)
	if r.Servers["stale"] != nil {
		t.Errorf("read ~/.claude.json although CLAUDE_CONFIG_DIR moves it")
	}
	for name, scope := range map[string]Scope{"user": ScopeUser, "local": ScopeLocal, "settings": ScopeUserSettings} {
		srv := r.Servers[name]
		if srv == nil || srv.Scope != scope || !strings.HasPrefix(srv.Source, dir) {
			t.Errorf("%s: %+v", name, srv)
		}
	}
}

// A server's env value is a secret when its name is sensitive or the value
// looks like a credential; an ordinary word in a plain variable is not.
func TestServerSecretsSkipOrdinaryWords(t *testing.T) {
	s := &Server{Env: map[string]string{"MODE": "legacy", "REGION": "production", "NOTES_TOKEN": "short",
		"UPSTREAM": "sk-ant-api03-abcdefghijklmnop"}, Headers: map[string]string{"X-Team": "blue"}}
	got := map[string]bool{}
	for _, v := range s.Secrets() {
		got[v] = true
	}
	for _, v := range []string{"short", "sk-ant-api03-abcdefghijklmnop", "blue"} {
		if !got[v] {
			t.Errorf("%q is not among the secrets %v", v, got)
		}
	}
	for _, v := range []string{"legacy", "production"} {
		if got[v] {
			t.Errorf("the ordinary word %q is taken for a secret", v)
		}
	}
}
