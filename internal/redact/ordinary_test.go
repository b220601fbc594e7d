package redact

import "testing"

// Redaction hides values that can be secrets, never the text around them:
// a file name with "key" in it is no credential's key.
func TestFileNamesAreNotKeys(t *testing.T) {
	for _, s := range []string{
		"the batch monkey.yaml: key.yaml line",
		"write it in keys.yaml: token night",
		"run nightwatch doctor /srv/key=night.yaml",
		"fix: nightwatch install cron /home/u/api-key-night.yaml again",
	} {
		if got := String(s); got != s {
			t.Errorf("String(%q) = %q", s, got)
		}
	}
	for in, want := range map[string]string{
		"API_KEY=abc123secret":    "API_KEY=" + Marker,
		`"api.key": "abc123"`:     `"api.key": "` + Marker + `"`,
		"token: abcdef123456 end": "token: " + Marker + " end",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}
