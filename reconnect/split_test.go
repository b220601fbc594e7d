package reconnect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name    string
		command string
		want    []string
	}{
		{"simple", "pm2 restart {server}", []string{"pm2", "restart", "{server}"}},
		{"runs of blanks", "  pm2\t restart \n x  ", []string{"pm2", "restart", "x"}},
		{"empty", "", nil},
		{"only blanks", " \t\n", nil},
		{"single quotes keep everything", `sh -c 'echo "$HOME" \n; exit 3'`, []string{"sh", "-c", `echo "$HOME" \n; exit 3`}},
		{"double quotes keep $ and backslashes", `echo "a $(date) \n b"`, []string{"echo", `a $(date) \n b`}},
		{"double quote escapes", `echo "q\" b\\ d\$ t\` + "`" + `"`, []string{"echo", `q" b\ d$ t` + "`"}},
		{"backslash outside quotes", `a\ b c\'d \$x \\`, []string{"a b", "c'd", "$x", `\`}},
		{"quotes join a word", `--name="my server"'s'x`, []string{"--name=my servers" + "x"}},
		{"empty quoted arguments", `a '' "" b`, []string{"a", "", "", "b"}},
		{"empty quotes inside a word vanish", `a''b`, []string{"ab"}},
		{"line continuation", "pm2 \\\nrestart \"x\\\ny\"", []string{"pm2", "restart", "xy"}},
		{"operators are literal text", "a && b; c|d > f $(id) `id`", []string{"a", "&&", "b;", "c|d", ">", "f", "$(id)", "`id`"}},
		{"single quote inside double", `echo "it's"`, []string{"echo", "it's"}},
		{"double quote inside single", `echo '"q"'`, []string{"echo", `"q"`}},
		{"multi-byte characters", `echo 日本\語 'サーバー'`, []string{"echo", "日本語", "サーバー"}},
		{"carriage return separates", "pm2 restart x\r\n", []string{"pm2", "restart", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Split(tt.command)
			if err != nil {
				t.Fatalf("Split(%q): %v", tt.command, err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Split(%q) = %q, want %q", tt.command, got, tt.want)
			}
		})
	}
}

func TestSplitErrors(t *testing.T) {
	tests := []struct {
		name    string
		command string
		problem string
		column  int
	}{
		{"unterminated single quote", `pm2 restart 'x`, "unterminated single quote", 13},
		{"unterminated double quote", `echo "abc`, "unterminated double quote", 6},
		{"escaped closing double quote", `echo "abc\"`, "unterminated double quote", 6},
		{"trailing backslash", `pm2 restart x\`, "trailing backslash", 14},
		{"column counts characters", `日本 'x`, "unterminated single quote", 4},
		{"NUL byte", "a\x00b", "NUL byte (not allowed in an argument)", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv, err := Split(tt.command)
			var syntaxErr *SyntaxError
			if !errors.As(err, &syntaxErr) {
				t.Fatalf("Split(%q) = %q, %v; want a *SyntaxError", tt.command, argv, err)
			}
			if syntaxErr.Problem != tt.problem || syntaxErr.Column != tt.column {
				t.Errorf("Split(%q) error = %q (column %d), want %q at column %d",
					tt.command, syntaxErr.Problem, syntaxErr.Column, tt.problem, tt.column)
			}
			if !strings.Contains(err.Error(), "column") {
				t.Errorf("error %q does not name the position", err)
			}
		})
	}
}

func TestShellSyntax(t *testing.T) {
	tests := []struct {
		command string
		want    []string
	}{
		{"pm2 restart {server}", nil},
		{"echo noop", nil},
		{"pm2 restart x && pm2 save", []string{"&&"}},
		{"a || b; c | d & e", []string{"||", ";", "|", "&"}},
		{"restart > /tmp/log 2>&1 < /dev/null", []string{">", ">&", "<"}},
		{"echo $(date) `id` ${HOME} $USER $?", []string{"$(", "`", "${", "$USER", "$?"}},
		{`echo "$(date) $HOME"`, []string{"$(", "$HOME"}},
		{`echo '$(date) && ~ # x'`, nil},
		{`echo \$HOME \&\& \~`, nil},
		{"ls ~/x a~b", []string{"~"}},
		{"pm2 restart x # nightly", []string{"#"}},
		{"echo a#b", nil},
		{"a;~/x", []string{";", "~"}},
		{"curl http://h/restart?a=1&b=2", []string{"&"}},
		{"(cd /srv && ./restart)", []string{"(", "&&"}},
		{"echo $ alone and $1", []string{"$1"}},
		{"echo 'unterminated && x", nil},
		{"a && b && c", []string{"&&"}},
	}
	for _, tt := range tests {
		if got := ShellSyntax(tt.command); !slices.Equal(got, tt.want) {
			t.Errorf("ShellSyntax(%q) = %q, want %q", tt.command, got, tt.want)
		}
	}
}

// TestExpandHostileServerNames runs a real command with a placeholder and
// checks that each hostile name arrives as one literal argument and that
// nothing in it runs.
func TestExpandHostileServerNames(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "pwned")
	names := []string{
		"a; rm -rf /",
		"$(id)",
		"`id`",
		"x' y",
		`x" y`,
		"with  spaces",
		"a && touch " + canary,
		"$(touch " + canary + ")",
		"{server}",
		"",
		"line\nbreak",
	}
	argv, err := Split(`printf '%s\n' {server} "[{server}]"`)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			expanded := Expand(argv, name)
			if len(expanded) != len(argv) {
				t.Fatalf("Expand(%q) has %d arguments, want %d", name, len(expanded), len(argv))
			}
			outcome := Run(context.Background(), expanded, Options{})
			if !outcome.OK {
				t.Fatalf("Run: %s (%s)", outcome.Err, outcome.Output)
			}
			want := name + "\n[" + name + "]"
			if outcome.Output != strings.TrimSpace(want) {
				t.Errorf("output = %q, want %q", outcome.Output, want)
			}
			if _, err := os.Stat(canary); err == nil {
				t.Fatalf("server name %q ran a command", name)
			}
		})
	}
}

func TestExpandLeavesItsInputAlone(t *testing.T) {
	argv := []string{"pm2", "restart", "{server}-{server}"}
	got := Expand(argv, "obsidian")
	if want := []string{"pm2", "restart", "obsidian-obsidian"}; !slices.Equal(got, want) {
		t.Errorf("Expand = %q, want %q", got, want)
	}
	if argv[2] != "{server}-{server}" {
		t.Errorf("Expand changed its input: %q", argv)
	}
}

// quote quotes arg for a POSIX shell (and so for Split).
func quote(arg string) string {
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}

func FuzzSplit(f *testing.F) {
	for _, seed := range []string{
		"pm2 restart {server}",
		`sh -c 'echo "$HOME"; exit 3'`,
		`a\ b "c\"d" '' "" e\`,
		"a && b | c > d $(e) `f`",
		"x\\\ny \"p\\\nq\"",
		`'unterminated`,
		"日本\\語 'サーバー'",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, command string) {
		_ = ShellSyntax(command)
		argv, err := Split(command)
		if err != nil {
			var syntaxErr *SyntaxError
			if !errors.As(err, &syntaxErr) || syntaxErr.Offset < 0 || syntaxErr.Offset >= len(command) {
				t.Fatalf("Split(%q): bad error %v", command, err)
			}
			return
		}
		quoted := make([]string, len(argv))
		for i, arg := range argv {
			quoted[i] = quote(arg)
		}
		again, err := Split(strings.Join(quoted, " "))
		if err != nil {
			t.Fatalf("re-splitting %q (from %q): %v", quoted, command, err)
		}
		if !slices.Equal(again, argv) {
			t.Fatalf("Split(%q) = %q, but re-split of the quoted form = %q", command, argv, again)
		}
		if expanded := Expand(argv, "a b; $(c)"); len(expanded) != len(argv) {
			t.Fatalf("Expand changed the argument count of %q", argv)
		}
	})
}
