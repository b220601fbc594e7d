package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
)

// TestWriteFinal: the session's final message is kept beside its stream,
// owner-only, redacted and bounded; no result, no file.
func TestWriteFinal(t *testing.T) {
	secret := "sk-final-" + strings.Repeat("q", 24)
	redact.Remember(secret)
	for _, tc := range []struct {
		name   string
		result *ResultEvent
		want   []string // in the file; nil: no file
		absent string
	}{
		{name: "no result", result: nil},
		{name: "empty text", result: &ResultEvent{}},
		{name: "kept", result: &ResultEvent{Result: "Summarised 12 notes."}, want: []string{"Summarised 12 notes."}},
		{name: "redacted", result: &ResultEvent{Result: "the key is " + secret}, want: []string{"the key is"}, absent: secret},
		{name: "bounded", result: &ResultEvent{Result: strings.Repeat("é", maxFinal)}, want: []string{"cut by nightwatch at 64 KiB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFinal(dir, tc.result)
			path := filepath.Join(dir, statedir.AttemptFinal)
			b, err := os.ReadFile(path)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("a file for no final message: %q", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("final.md lacks %q: %.200q", w, b)
				}
			}
			if tc.absent != "" && strings.Contains(string(b), tc.absent) {
				t.Errorf("final.md holds %q", tc.absent)
			}
			if len(b) > maxFinal+200 || !utf8.Valid(b) {
				t.Errorf("final.md is %d bytes (valid UTF-8: %v), want at most about %d of text", len(b), utf8.Valid(b), maxFinal)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm()&0o077 != 0 && os.PathSeparator == '/' {
				t.Errorf("mode %v, want owner-only", fi.Mode())
			}
		})
	}
}
