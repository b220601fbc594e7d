package doctor

import (
	"context"
	"path/filepath"
	"testing"
)

func TestHookPathWithBackslashes(t *testing.T) {
	home := t.TempDir()
	cwd := filepath.Join(home, "project")
	mkdir(t, cwd)
	settings := filepath.Join(home, ".claude", "settings.json")
	e := &env{Options: withDefaults(Options{Home: home, Cwd: cwd, ManagedSettingsDir: filepath.Join(home, "managed"),
		Getenv: func(string) (string, bool) { return "", false }, Environ: []string{}})}
	write(t, settings, `{"hooks": {"PreToolUse": [{"matcher": "mcp__.*", "hooks": [
		{"type": "command", "command": "C:\\Users\\lily\\bin\\nightwatch.exe hook"},
		{"type": "command", "command": "C:/Users/lily/bin/nightwatch.exe hook"},
		{"type": "command", "command": "\"C:\\Program Files\\nightwatch\\nightwatch.exe\" hook"},
		{"type": "command", "command": "C:\\Users\\lily\\bin\\nightwatch.exe hook", "shell": "powershell"},
		{"type": "command", "command": "C:\\tools\\other.exe"}]}]}}`)
	checks := e.hookPaths(context.Background())
	if len(checks) != 1 {
		t.Fatalf("%d findings, want 1:\n%s", len(checks), dump(checks))
	}
	mustFind(t, checks, "hook-path", Fail, settings, `C:\\Users\\lily\\bin\\nightwatch.exe hook`)
	if checks[0].Fix != `write the path with forward slashes: "C:/Users/lily/bin/nightwatch.exe hook"` {
		t.Errorf("fix %q", checks[0].Fix)
	}
}
