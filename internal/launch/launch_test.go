package launch

import (
	"slices"
	"testing"
)

func TestEnvironmentIsBasePlusKept(t *testing.T) {
	env := []string{"PATH=/bin", "HOME=/h", "NOTES_API_KEY=notes-key", "OTHER_TOKEN=other", "ANTHROPIC_API_KEY=sk-ant", "EMPTY="}
	got := Environment(env, []string{"NOTES_API_KEY", "EMPTY", "UNSET", "PATH"})
	want := []string{"PATH=/bin", "HOME=/h", "NOTES_API_KEY=notes-key", "EMPTY="}
	if !slices.Equal(got, want) {
		t.Errorf("Environment = %q, want %q", got, want)
	}
}

func TestParseKeepAndArgs(t *testing.T) {
	names, err := ParseKeep("A,B_2,A")
	if err != nil || !slices.Equal(names, []string{"A", "B_2"}) {
		t.Errorf("ParseKeep = %q, %v", names, err)
	}
	for _, bad := range []string{"A,,B", "1A", "A=B", "A B", "$(x)"} {
		if _, err := ParseKeep(bad); err == nil {
			t.Errorf("ParseKeep(%q) accepted", bad)
		}
	}
	if got := Args("notes", []string{"K"}, []string{"npx", "-y", "srv"}); !slices.Equal(got, []string{"exec-server", "--server", "notes", "--keep", "K", "--", "npx", "-y", "srv"}) {
		t.Errorf("Args = %q", got)
	}
}
