package knobs

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestFailureThreshold(t *testing.T) {
	tests := []struct {
		value   string
		want    int
		source  string
		problem bool
	}{
		{"", 3, "default", false},
		{"5", 5, "NIGHTWATCH_FAILURE_THRESHOLD", false},
		{"1", 1, "NIGHTWATCH_FAILURE_THRESHOLD", false},
		{"0", 3, "default", true},
		{"three", 3, "default", true},
	}
	for _, tt := range tests {
		env := map[string]string{}
		if tt.value != "" {
			env["NIGHTWATCH_FAILURE_THRESHOLD"] = tt.value
		}
		k := FromEnv(func(n string) (string, bool) { v, ok := env[n]; return v, ok }, "/home/u")
		if k.FailureThreshold.V != tt.want || k.FailureThreshold.Source != tt.source || (len(k.Problems) > 0) != tt.problem {
			t.Errorf("%q: %+v problems %q", tt.value, k.FailureThreshold, k.Problems)
		}
		if k.Settings().FailureThreshold != tt.want {
			t.Errorf("%q: the settings did not get the threshold", tt.value)
		}
	}
}

func TestConfigOptionsFollowClaudeConfigDir(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": "~/cc"}
	getenv := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	k := FromEnv(getenv, "/home/u")
	if got := k.ConfigOptions("/w", "/home/u", getenv).ConfigDir; got != filepath.Join("/home/u", "cc") {
		t.Errorf("ConfigDir %q", got)
	}
	env["NIGHTWATCH_MCP_CONFIG"] = "/etc/mcp.json"
	k = FromEnv(getenv, "/home/u")
	if got := k.ConfigOptions("/w", "/home/u", getenv).Explicit; len(got) != 1 || !strings.HasSuffix(got[0], "mcp.json") {
		t.Errorf("Explicit %q", got)
	}
}
