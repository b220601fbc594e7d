package doctor

import "testing"

// The hook is recognised whether it is registered as `nightwatch hook` or
// as the dedicated nightwatch-hook executable, and not in other commands.
func TestNightwatchHookRecognised(t *testing.T) {
	for _, tc := range []struct {
		command string
		want    bool
	}{
		{"/opt/nightwatch/bin/nightwatch hook", true},
		{"/opt/nightwatch/bin/nightwatch-hook", true},
		{"/opt/nightwatch/bin/nightwatch-hook --state /s/cache.json", true},
		{`"C:/Program Files/nightwatch/nightwatch-hook.exe" --state x`, true},
		{"nightwatch-hook", true},
		{"/opt/nightwatch/bin/nightwatch-hooks", false},
		{"/opt/nightwatch/bin/nightwatch status", false},
		{"node ~/.claude/scripts/hooks/mcp-health-check.js", false},
		{"/opt/my-nightwatch-hook-wrapper", false},
	} {
		if got := nightwatchHook.MatchString(tc.command); got != tc.want {
			t.Errorf("%q: recognised %v, want %v", tc.command, got, tc.want)
		}
	}
}
