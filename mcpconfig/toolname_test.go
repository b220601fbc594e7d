package mcpconfig

import "testing"

func TestNormalizeName(t *testing.T) {
	tests := map[string]string{
		"plain":        "plain",
		"with_under":   "with_under",
		"with-dash":    "with-dash",
		"a__b":         "a__b",
		"my.server":    "my_server",
		"my server":    "my_server",
		"a/b:c@d":      "a_b_c_d",
		"café":         "caf_",
		"rocket🚀":      "rocket__", // one UTF-16 surrogate pair, two units
		"":             "",
		"Claude.ai X!": "Claude_ai_X_",
	}
	for in, want := range tests {
		if got := NormalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMatchTool(t *testing.T) {
	tests := []struct {
		name       string
		tool       string
		names      []string
		wantServer string
		wantTool   string
		wantOK     bool
	}{
		{"simple", "mcp__obsidian__search", []string{"obsidian"}, "obsidian", "search", true},
		{"underscore in name", "mcp__my_db__query", []string{"my", "my_db"}, "my_db", "query", true},
		{"dash in name", "mcp__agent-memory__store", []string{"agent-memory"}, "agent-memory", "store", true},
		{"double underscore longest wins", "mcp__a__b__tool", []string{"a", "a__b"}, "a__b", "tool", true},
		{"longest wins in any order", "mcp__a__b__tool", []string{"a__b", "a"}, "a__b", "tool", true},
		{"shorter when longer does not fit", "mcp__a__c__tool", []string{"a", "a__b"}, "a", "c__tool", true},
		{"dot normalized", "mcp__my_server__ping", []string{"my.server"}, "my.server", "ping", true},
		{"same normalized form: exact wins", "mcp__my_server__ping", []string{"my.server", "my_server"}, "my_server", "ping", true},
		{"same normalized form: any order", "mcp__my_server__ping", []string{"my_server", "my.server"}, "my_server", "ping", true},
		{"same normalized form: smaller wins", "mcp__my_server__ping", []string{"my server", "my.server"}, "my server", "ping", true},
		{"duplicates", "mcp__s__t", []string{"s", "s"}, "s", "t", true},
		{"tool with double underscore", "mcp__s__do__it", []string{"s"}, "s", "do__it", true},
		{"prefix of a name is not a match", "mcp__obs__x", []string{"obsidian"}, "", "", false},
		{"name prefix of segment", "mcp__obsidian2__x", []string{"obsidian"}, "", "", false},
		{"non MCP tool", "Bash", []string{"Bash"}, "", "", false},
		{"mcp__ alone", "mcp__", []string{""}, "", "", false},
		{"no tool", "mcp__x", []string{"x"}, "", "", false},
		{"empty tool", "mcp__x__", []string{"x"}, "", "", false},
		{"case sensitive", "mcp__Obsidian__x", []string{"obsidian"}, "", "", false},
		{"no names", "mcp__x__y", nil, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server, tool, ok := MatchTool(tt.tool, tt.names)
			if server != tt.wantServer || tool != tt.wantTool || ok != tt.wantOK {
				t.Errorf("MatchTool(%q, %q) = %q, %q, %v; want %q, %q, %v",
					tt.tool, tt.names, server, tool, ok, tt.wantServer, tt.wantTool, tt.wantOK)
			}
		})
	}
}

func TestSplitToolName(t *testing.T) {
	tests := []struct {
		tool, server, name string
		ok                 bool
	}{
		{"mcp__obsidian__search", "obsidian", "search", true},
		{"mcp__a__b__tool", "a", "b__tool", true},
		{"mcp__my-db__q", "my-db", "q", true},
		{"mcp__", "", "", false},
		{"mcp__x", "", "", false},
		{"mcp__x__", "", "", false},
		{"mcp____tool", "", "", false},
		{"Read", "", "", false},
		{"MCP__x__y", "", "", false},
	}
	for _, tt := range tests {
		server, name, ok := SplitToolName(tt.tool)
		if server != tt.server || name != tt.name || ok != tt.ok {
			t.Errorf("SplitToolName(%q) = %q, %q, %v; want %q, %q, %v", tt.tool, server, name, ok, tt.server, tt.name, tt.ok)
		}
	}
}

func TestLookup(t *testing.T) {
	dotted := &Server{Name: "my.server"}
	plain := &Server{Name: "plain"}
	r := &Resolved{
		Servers: map[string]*Server{"my.server": dotted, "plain": plain},
		Names:   []string{"my.server", "plain"},
	}
	tests := []struct {
		name string
		want *Server
	}{
		{"plain", plain},
		{"my.server", dotted},
		{"my_server", dotted}, // as taken from a tool name
		{"my server", dotted},
		{"other", nil},
	}
	for _, tt := range tests {
		if got := r.Lookup(tt.name); got != tt.want {
			t.Errorf("Lookup(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
