package clirange

import "testing"

func TestCompareAndWhere(t *testing.T) {
	cases := []struct {
		a, b string
		cmp  int
	}{
		{"2.1.197", "2.1.332", -1},
		{"2.1.332", "2.1.332", 0},
		{"2.10.0", "2.9.99", 1},
		{"3.0.0", "2.1.332", 1},
		{"2.1.99", "2.1.197", -1}, // numeric, not lexical
	}
	for _, c := range cases {
		if got := Compare(c.a, c.b); got != c.cmp {
			t.Errorf("Compare(%q, %q) = %d, want %d", c.a, c.b, got, c.cmp)
		}
	}
	for v, want := range map[string]string{
		"2.1.196": "older", Oldest: "inside", "2.1.250": "inside", Newest: "inside", "2.1.333": "newer", "2.2.0": "newer",
	} {
		if got := Where(v); got != want {
			t.Errorf("Where(%q) = %q, want %q", v, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]string{
		"2.1.332 (Claude Code)\n": "2.1.332",
		"claude 2.1.197":          "2.1.197",
		"no version here":         "",
	} {
		if got := Parse(in); got != want {
			t.Errorf("Parse(%q) = %q, want %q", in, got, want)
		}
	}
}
