package command

import (
	"reflect"
	"testing"
)

func TestQuoteArg(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain", "plain"},
		{`C:\work\night\night.yaml`, `C:\work\night\night.yaml`},
		{`C:\Program Files\nightwatch`, `"C:\Program Files\nightwatch"`},
		{`a "b"`, `"a \"b\""`},
		{`trailing\ `, `"trailing\ "`},
		{`C:\dir with space\`, `"C:\dir with space\\"`},
		{`x\"y`, `"x\\\"y"`},
	} {
		if got := QuoteArg(tc.in); got != tc.want {
			t.Errorf("QuoteArg(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestQuoteRoundTrip holds QuoteArg and SplitCommandLine to each other on
// the arguments that make quoting hard.
func TestQuoteRoundTrip(t *testing.T) {
	args := []string{"run", `C:\Users\Lily Ann\night\night.yaml`, "", `\\server\share\`, `a\\"b`, `"`, `\`, "tab\there", `end\\`}
	line := JoinArgs(args)
	if got := SplitCommandLine(line); !reflect.DeepEqual(got, args) {
		t.Errorf("SplitCommandLine(%s) = %q, want %q", line, got, args)
	}
	if got := SplitCommandLine(`a "b ""c"" d" e`); !reflect.DeepEqual(got, []string{"a", `b "c" d`, "e"}) {
		t.Errorf(`"" inside quotes: %q`, got)
	}
}
