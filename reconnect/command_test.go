package reconnect

import "testing"

func TestEnvKey(t *testing.T) {
	tests := []struct{ server, want string }{
		{"agentmemory", "AGENTMEMORY"},
		{"agent-memory.v2", "AGENT_MEMORY_V2"},
		{"Obsidian MCP", "OBSIDIAN_MCP"},
		{"a;b$(c)", "A_B__C_"},
		{"café", "CAF_"},
		{"db🚀", "DB__"}, // two UTF-16 code units in JavaScript
		{"", ""},
	}
	for _, tt := range tests {
		if got := EnvKey(tt.server); got != tt.want {
			t.Errorf("EnvKey(%q) = %q, want %q", tt.server, got, tt.want)
		}
	}
}

func TestCommandFor(t *testing.T) {
	all := map[string]string{
		"NIGHTWATCH_RECONNECT_AGENT_MEMORY_V2": "nightwatch-specific",
		"ECC_MCP_RECONNECT_AGENT_MEMORY_V2":    "ecc-specific",
		"NIGHTWATCH_RECONNECT_COMMAND":         "nightwatch-global",
		"ECC_MCP_RECONNECT_COMMAND":            "ecc-global",
	}
	without := func(env map[string]string, names ...string) map[string]string {
		out := map[string]string{}
		for k, v := range env {
			out[k] = v
		}
		for _, name := range names {
			delete(out, name)
		}
		return out
	}
	tests := []struct {
		name        string
		server      string
		env         map[string]string
		wantCommand string
		wantSource  string
	}{
		{"nightwatch per-server wins", "agent-memory.v2", all, "nightwatch-specific", "NIGHTWATCH_RECONNECT_AGENT_MEMORY_V2"},
		{"ecc per-server next", "agent-memory.v2",
			without(all, "NIGHTWATCH_RECONNECT_AGENT_MEMORY_V2"), "ecc-specific", "ECC_MCP_RECONNECT_AGENT_MEMORY_V2"},
		{"nightwatch global next", "agent-memory.v2",
			without(all, "NIGHTWATCH_RECONNECT_AGENT_MEMORY_V2", "ECC_MCP_RECONNECT_AGENT_MEMORY_V2"),
			"nightwatch-global", "NIGHTWATCH_RECONNECT_COMMAND"},
		{"ecc global last", "agent-memory.v2",
			map[string]string{"ECC_MCP_RECONNECT_COMMAND": "ecc-global"}, "ecc-global", "ECC_MCP_RECONNECT_COMMAND"},
		{"other server gets the global", "obsidian", all, "nightwatch-global", "NIGHTWATCH_RECONNECT_COMMAND"},
		{"set but empty is skipped", "agent-memory.v2",
			map[string]string{"NIGHTWATCH_RECONNECT_AGENT_MEMORY_V2": "", "ECC_MCP_RECONNECT_AGENT_MEMORY_V2": "  ", "ECC_MCP_RECONNECT_COMMAND": "echo noop"},
			"echo noop", "ECC_MCP_RECONNECT_COMMAND"},
		{"server named command", "command", map[string]string{"ECC_MCP_RECONNECT_COMMAND": "g"}, "g", "ECC_MCP_RECONNECT_COMMAND"},
		{"nothing configured", "obsidian", map[string]string{"PATH": "/bin"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(name string) (string, bool) {
				v, ok := tt.env[name]
				return v, ok
			}
			command, source := CommandFor(tt.server, getenv)
			if command != tt.wantCommand || source != tt.wantSource {
				t.Errorf("CommandFor(%q) = %q, %q; want %q, %q", tt.server, command, source, tt.wantCommand, tt.wantSource)
			}
		})
	}
}
