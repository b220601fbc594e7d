package environ

import (
	"slices"
	"testing"
)

func TestBaseKeepsNoCredential(t *testing.T) {
	env := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp/x",
		"ANTHROPIC_API_KEY=sk-ant-agent", "GITHUB_TOKEN=ghp_other", "NOTES_API_KEY=notes", "AWS_SECRET_ACCESS_KEY=a",
		"NIGHTWATCH_SPAWN=abc", "CLAUDECODE=1", "SystemRoot=C:\\Windows",
	}
	if got, want := baseOf(env, "linux"), []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp/x", "NIGHTWATCH_SPAWN=abc"}; !slices.Equal(got, want) {
		t.Errorf("linux base = %q, want %q", got, want)
	}
	got := baseOf(env, "windows")
	if !slices.Contains(got, "SystemRoot=C:\\Windows") {
		t.Errorf("windows base lacks SystemRoot (case-insensitive): %q", got)
	}
	for _, kv := range got {
		for _, secret := range []string{"ANTHROPIC_API_KEY", "GITHUB_TOKEN", "NOTES_API_KEY", "AWS_SECRET"} {
			if len(kv) >= len(secret) && kv[:len(secret)] == secret {
				t.Errorf("base holds %s", kv)
			}
		}
	}
}
