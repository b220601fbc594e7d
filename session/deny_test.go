package session

import (
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

func TestRulePath(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the table's paths are POSIX paths; the drive case is TestRulePathWindows")
	}
	for _, c := range []struct{ in, want string }{
		{"/home/ann/night/config.env", "//home/ann/night/config.env"},
		{"/home/ann/My Nights/bob's/.nightwatch/**", "//home/ann/My Nights/bob's/.nightwatch/**"},
		// A segment the rule would read as a pattern is widened to "*".
		{"/srv/night[1]/config.env", "//srv/*/config.env"},
		{"/srv/a*b/c (copy)/x", "//srv/*/*/x"},
		{`/srv/back\slash/x`, "//srv/*/x"},
	} {
		if got := rulePath(c.in); got != c.want {
			t.Errorf("rulePath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDenyRules(t *testing.T) {
	b := sessionTestBatch(t)
	b.EnvFile = filepath.Join(b.Dir, "config.env")
	home := t.TempDir()
	for _, c := range []struct {
		name string
		env  []string
		cred string
	}{
		{"home", []string{"HOME=" + home}, filepath.Join(home, ".claude", ".credentials.json")},
		{"config dir", []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=/etc/claude-night"}, "/etc/claude-night/.credentials.json"},
		{"neither", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := sessionTestSpec(b, sessionTestJob("j", "p"), c.env...)
			got := denyRules(spec)
			want := []string{
				"Read(" + rulePath(b.EnvFile) + ")", "Edit(" + rulePath(b.EnvFile) + ")",
				"Read(" + rulePath(filepath.Join(b.StateDir, "**")) + ")", "Edit(" + rulePath(filepath.Join(b.StateDir, "**")) + ")",
				"Edit(" + rulePath(b.File) + ")",
			}
			if c.cred != "" {
				want = append(want, "Read("+rulePath(c.cred)+")", "Edit("+rulePath(c.cred)+")")
			}
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Errorf("no %s in %q", w, got)
				}
			}
			if slices.Contains(got, "Read("+rulePath(b.File)+")") {
				t.Errorf("the batch file is denied to Read: %q", got)
			}
		})
	}
}
