package text

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain name":         "plain name",
		"ünïcode ok":         "ünïcode ok",
		"red\x1b[31mtext":    `red\x1b[31mtext`,
		"two\nlines":         `two\nlines`,
		"c1\u009bcsi":        `c1\u009bcsi`,
		"bad\xffbyte":        `bad\xffbyte`,
		`quote " and \ back`: `quote " and \ back`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPlainName(t *testing.T) {
	for in, want := range map[string]bool{"notes": true, "my-server_2.x": true, "": false, "a b": false, "x\x1b": false, "é": false} {
		if got := PlainName(in); got != want {
			t.Errorf("PlainName(%q) = %v, want %v", in, got, want)
		}
	}
}
