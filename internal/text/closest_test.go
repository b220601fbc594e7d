package text

import "testing"

func TestClosest(t *testing.T) {
	fields := []string{"name", "prompt", "prompt_file", "servers", "timeout", "stall_timeout", "retries", "needs"}
	for _, c := range []struct{ word, want string }{
		{"promt", "prompt"}, {"timout", "timeout"}, {"tiemout", "timeout"}, {"sever", ""}, {"severs", "servers"},
		{"Prompt", "prompt"}, {"prompt", ""}, {"xyz", ""}, {"retires", "retries"}, {"ned", "needs"[:0]},
	} {
		if got := Closest(c.word, fields); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.word, got, c.want)
		}
	}
	if got := Closest("htp", []string{"stdio", "http", "sse", "ws"}); got != "http" {
		t.Errorf("htp: %q", got)
	}
	if got := DidYouMean("promt", fields); got != ` (did you mean "prompt"?)` {
		t.Errorf("DidYouMean: %q", got)
	}
}
