package text

import "testing"

func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"a\n b\t\tc", 10, "a b c"},
		{"abcdef", 4, "abc…"},
		{"abcd", 4, "abcd"},
		{"ééééé", 3, "éé…"},
		{"  ", 5, ""},
	} {
		if got := OneLine(tc.in, tc.max); got != tc.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain":          "'plain'",
		"bob's":          `'bob'\''s'`,
		"~/My Nights/$x": "'~/My Nights/$x'",
		"":               "''",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestJoinNonEmpty(t *testing.T) {
	if got := JoinNonEmpty(": ", "a", "", "b"); got != "a: b" {
		t.Errorf("got %q", got)
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"two\nlines  here", 0, "two lines here"},
		{"abcdefghij", 5, "abcde…"},
		{"ééé", 3, "é…"}, // é is 2 bytes: never cut inside a rune
	} {
		if got := Clip(c.in, c.max); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}
