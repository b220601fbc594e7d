package secrets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

// TestRememberFile: the values a session's environment left out for its
// servers are remembered from the attempt's file, by env_file's rule.
func TestRememberFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secrets.json")
	data, err := FileData([]string{"BETA_KEY=bk7f3a", "WEB_URL=https://h/s/zq81kd93ja/mcp", "REGION=eu", "HOME=/home/someone-else", "broken"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	RememberFile(path)
	RememberFile(filepath.Join(dir, "missing.json")) // skipped, no panic
	for in, want := range map[string]string{
		"key bk7f3a here":                "[REDACTED]", // a secret's name: whatever its length
		"url https://h/s/zq81kd93ja/mcp": "[REDACTED]", // a plain name of 8+ bytes
		"region eu":                      "region eu",  // a plain name's short value
		"home /home/someone-else":        "home /home/someone-else",
	} {
		if got := redact.String(in); !strings.Contains(got, want) {
			t.Errorf("redact(%q) = %q, want %q in it", in, got, want)
		}
	}
}
