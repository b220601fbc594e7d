package mcpconfig

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func envOf(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestExpand(t *testing.T) {
	getenv := envOf(map[string]string{"A": "alpha", "B": "beta", "EMPTY": ""})
	tests := []struct {
		in          string
		want        string
		wantMissing []string
	}{
		{"", "", nil},
		{"no refs", "no refs", nil},
		{"${A}", "alpha", nil},
		{"pre-${A}-post", "pre-alpha-post", nil},
		{"${A}${B}", "alphabeta", nil},
		{"${A:-d}", "alpha", nil},
		{"${UNSET:-d}", "d", nil},
		{"${UNSET:-}", "", nil},
		{"${EMPTY:-d}", "d", nil}, // bash ":-": empty counts as unset
		{"${EMPTY}", "", nil},
		{"${UNSET:-a:-b}", "a:-b", nil},
		{"${UNSET:-$A}", "$A", nil}, // a default is not expanded again
		{"${UNSET}", "${UNSET}", []string{"UNSET"}},
		{"x${UNSET}y${UNSET}z${OTHER}", "x${UNSET}y${UNSET}z${OTHER}", []string{"UNSET", "OTHER"}},
		{"$A", "$A", nil},
		{"$A${A}", "$Aalpha", nil},
		{"~/x", "~/x", nil},
		{"$", "$", nil},
		{"$$", "$$", nil},
		{"${", "${", nil},
		{"${A", "${A", nil},
		{"pre ${A and more", "pre ${A and more", nil},
		{"${}", "${}", nil},
		{"${:-d}", "${:-d}", nil},
		{"${A B}", "${A B}", nil},
		{"${A${B}}", "${A${B}}", nil},
		{"${UNSET:-${B}}", "${UNSET:-${B}}", nil},
		{"${A}}", "alpha}", nil},
		{"{A}", "{A}", nil},
		{"${my.var}", "${my.var}", []string{"my.var"}},
		{"€${A}€", "€alpha€", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, missing := Expand(tt.in, getenv)
			if got != tt.want || !slices.Equal(missing, tt.wantMissing) {
				t.Errorf("Expand(%q) = %q, %q; want %q, %q", tt.in, got, missing, tt.want, tt.wantMissing)
			}
		})
	}
}

func TestExpandNilGetenv(t *testing.T) {
	got, missing := Expand("${A}-${B:-b}", nil)
	if got != "${A}-b" || !slices.Equal(missing, []string{"A"}) {
		t.Errorf("got %q %q", got, missing)
	}
}

func TestExplicitPaths(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	home := "/home/lily"
	getenv := envOf(map[string]string{"HOME": home, "CFG": "/etc/nw", "EMPTY": ""})
	sep := string(os.PathListSeparator)
	tests := []struct {
		name  string
		value string
		want  []string
	}{
		{"empty", "", nil},
		{"only separators", sep + " " + sep, nil},
		{"absolute", "/a/b.json", []string{"/a/b.json"}},
		{"list", "/a.json" + sep + "/b.json", []string{"/a.json", "/b.json"}},
		{"empty elements dropped", sep + "/a.json" + sep + sep + "/b.json" + sep, []string{"/a.json", "/b.json"}},
		{"whitespace trimmed", "  /a.json \n", []string{"/a.json"}},
		{"tilde slash", "~/.claude/settings.json", []string{home + "/.claude/settings.json"}},
		{"tilde alone", "~", []string{home}},
		{"tilde user untouched", "~lily/x", []string{filepath.Join(wd, "~lily/x")}},
		{"tilde typo kept", "/Users/~/.claude/settings.json", []string{"/Users/~/.claude/settings.json"}},
		{"dollar var", "$HOME/.claude/settings.json", []string{home + "/.claude/settings.json"}},
		{"braced var", "${HOME}/.claude/settings.json", []string{home + "/.claude/settings.json"}},
		{"default", "${NOPE:-/d}/x.json", []string{"/d/x.json"}},
		{"unset left as written", "$NOPE/x.json", []string{filepath.Join(wd, "$NOPE/x.json")}},
		{"var to empty dropped", "$EMPTY", nil},
		{"relative", "conf/x.json", []string{filepath.Join(wd, "conf/x.json")}},
		{"cleaned", "/a/../b/./c.json", []string{"/b/c.json"}},
		{"mixed", "$CFG/a.json" + sep + "~/b.json", []string{"/etc/nw/a.json", home + "/b.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ExplicitPaths(tt.value, home, getenv)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ExplicitPaths(%q) = %q, want %q", tt.value, got, tt.want)
			}
		})
	}
}

// The article's trap end to end: the typo survives ExplicitPaths and
// Resolve reports it instead of silently finding no servers.
func TestExplicitPathsTildeTypoReported(t *testing.T) {
	home := t.TempDir()
	writeJSON(t, filepath.Join(home, ".claude", "settings.json"), servers("u", "obsidian"))
	typo := filepath.Join(home, "~", ".claude", "settings.json")
	paths := ExplicitPaths(typo, home, nil)
	r := Resolve(Options{Home: home, Cwd: home, Explicit: paths})
	if len(r.Servers) != 0 || len(r.Problems) != 1 {
		t.Fatalf("servers=%v problems=%+v", r.Names, r.Problems)
	}
	if msg := r.Problems[0].Message; !strings.Contains(msg, typo) || !strings.Contains(msg, "only expanded by a shell") {
		t.Errorf("message = %q", msg)
	}
}
