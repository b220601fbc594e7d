package doctor

import (
	"path/filepath"
	"strings"
	"testing"
)

// A nightwatch hook installed by hand whose PreToolUse timeout is shorter
// than a held call needs (the longest hold plus probes and reconnects, as
// the night writes into its own sessions) is a warning with the timeout
// to write; a long enough one, or none (Claude Code's 600 s), is fine.
func TestHookTimeoutCutsHoldsShort(t *testing.T) {
	timeout := func(v any) map[string]any {
		h := map[string]any{"type": "command", "command": "/opt/nightwatch/bin/nightwatch-hook"}
		if v != nil {
			h["timeout"] = v
		}
		entry := []map[string]any{{"matcher": "mcp__.*", "hooks": []map[string]any{h}}}
		return map[string]any{"hooks": map[string]any{"PreToolUse": entry, "PostToolUse": entry}}
	}
	tests := []struct {
		name    string
		user    any    // the user settings' PreToolUse timeout (nil: none written)
		project any    // a project settings file's, when not nil
		batch   string // a batch's health section ("": no batch)
		env     map[string]string
		wantIn  string // the file the warning names ("": no warning)
		wantFix string
	}{
		{"too short for the default hold", 60, nil, "", nil, "user", `set "timeout": 175 on that hook`},
		{"long enough", 180, nil, "", nil, "", ""},
		{"none written: Claude Code's 600 s", nil, nil, "", nil, "", ""},
		{"the environment's hold", 180, nil, "", map[string]string{"NIGHTWATCH_MAX_HOLD": "4m"}, "user", `set "timeout": 295`},
		{"a project's hook", 180, 90, "", nil, "project", `set "timeout": 175`},
		{"the batch's longer hold", 180, nil, "health: {max_hold: 5m}\n", nil, "user", `set "timeout": 355`},
		{"the batch holds nothing", 60, nil, "health: {max_hold: 0}\n", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t)
			user := filepath.Join(s.home, ".claude", "settings.json")
			project := filepath.Join(s.cwd, ".claude", "settings.json")
			s.writeJSON(user, timeout(tt.user))
			if tt.project != nil {
				s.writeJSON(project, timeout(tt.project))
			}
			for k, v := range tt.env {
				s.env[k] = v
			}
			if tt.batch != "" {
				s.batch = filepath.Join(s.home, "night.yaml")
				write(t, s.batch, "version: 1\nname: n\nstate_dir: "+filepath.Join(s.home, "state")+"\n"+tt.batch+"jobs:\n  - {name: a, prompt: hi}\n")
			}
			checks := s.run()
			if len(find(checks, "batch", Fail)) > 0 {
				t.Fatalf("the batch does not load: %+v", find(checks, "batch", Fail))
			}
			warned := find(checks, "hook-timeout", Warn)
			if tt.wantIn == "" {
				if len(warned) > 0 || len(find(checks, "hook-timeout", OK)) != 1 {
					t.Errorf("hook-timeout checks %+v, want one ok", append(warned, find(checks, "hook-timeout", OK)...))
				}
				return
			}
			file := map[string]string{"user": user, "project": project}[tt.wantIn]
			if len(warned) != 1 || !strings.Contains(warned[0].Detail, file) || !strings.Contains(warned[0].Fix, tt.wantFix) ||
				!strings.Contains(warned[0].Fix, file) {
				t.Errorf("warnings %+v, want one naming %s with the fix %q", warned, file, tt.wantFix)
			}
		})
	}
}
