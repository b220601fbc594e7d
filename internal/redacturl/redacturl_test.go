package redacturl

import (
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

// The secrets these tests remember stay remembered for the rest of the
// test process (redact keeps them per process): every case uses values
// of its own, and the words it checks are never one of them.

func TestURLElidesWhatMayBeSecret(t *testing.T) {
	for raw, want := range map[string]string{
		"https://mcp.example.com/mcp":                        "https://mcp.example.com/mcp",
		"https://mcp.example.com/api/mcp":                    "https://mcp.example.com/api/mcp",
		"http://127.0.0.1:8080":                              "http://127.0.0.1:8080",
		"http://127.0.0.1:8080/":                             "http://127.0.0.1:8080/",
		"https://mcp.example.com/api/mcp/s/a8F3kQ9zL2x/mcp":  "https://mcp.example.com/…",
		"https://user:hunter22@mcp.example.com/mcp":          "https://[REDACTED]@mcp.example.com/mcp",
		"https://mcp.example.com/mcp?token=abcdef123456":     "https://mcp.example.com/mcp?…",
		"https://mcp.example.com/sse#frag":                   "https://mcp.example.com/sse",
		"not a url":                                          redact.Marker,
		"https://mcp.example.com/" + strings.Repeat("x", 40): "https://mcp.example.com/…",
	} {
		if got := Elide(raw); got != want {
			t.Errorf("Elide(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestRememberURLRedactsItsSecretParts(t *testing.T) {
	Remember("https://bob:pw-hunter22@mcp.example.com/api/mcp/s/a8F3kQ9zL2xW/mcp?key=qk-77665544")
	msg := "POST https://bob:pw-hunter22@mcp.example.com/api/mcp/s/a8F3kQ9zL2xW/mcp?key=qk-77665544 failed"
	got := redact.String(msg)
	for _, s := range []string{"pw-hunter22", "a8F3kQ9zL2xW", "qk-77665544"} {
		if strings.Contains(got, s) {
			t.Errorf("String left %q: %q", s, got)
		}
	}
	if !strings.Contains(got, "mcp.example.com/api/mcp/s/") {
		t.Errorf("String removed the plain parts: %q", got)
	}
}

// Remember remembers only the parts of a URL that look like secrets
// (issue 12): real secret-URL shapes are redacted from every text, and an
// ordinary path or query ("workspace", "sse") stays readable everywhere,
// while Elide still elides both from a URL shown or stored. Before: every
// segment that was not an endpoint word was remembered, so
// /v1/workspace/mcp hid "workspace" from every text.
func TestRememberURLOnlyRemembersWhatLooksSecret(t *testing.T) {
	for _, c := range []struct {
		url     string
		secrets []string // must be redacted from a text
		words   []string // must stay readable
	}{
		{"https://mcp.zapier.com/api/mcp/s/NzY1ZjQ2YTMtOGI4Zi00YzJkLWE1ZTgtMmQ1YjY5ZjE4ZjQz/mcp",
			[]string{"NzY1ZjQ2YTMtOGI4Zi00YzJkLWE1ZTgtMmQ1YjY5ZjE4ZjQz"}, []string{"api", "mcp", " s "}},
		{"https://mcp.composio.dev/composio/server/3f2c9b1e-8d4a-4f6b-9c2e-7a1d5e8b0f34/mcp?include_composio_helper_actions=true",
			[]string{"3f2c9b1e-8d4a-4f6b-9c2e-7a1d5e8b0f34"}, []string{"composio", "true"}},
		{"https://example.com/mcp?key=qk77665544", []string{"qk77665544"}, nil},
		{"https://example.com/sse?token=abcdefgh&transport=sse", []string{"abcdefgh"}, []string{"transport", "sse"}},
		{"https://example.com/mcp?api_key=sk-proj-AbCdEfGhIjKl", []string{"sk-proj-AbCdEfGhIjKl"}, nil},
		{"https://hooks.slack.com/services/T0000/B0000/bZ7xQ2mK9pL4vN8rT1wY5cHd", []string{"bZ7xQ2mK9pL4vN8rT1wY5cHd"}, []string{"services", "hooks"}},
		{"https://example.com/v1/workspace/mcp", nil, []string{"workspace"}},
		{"https://example.com/tenants/acme-corp/projects/night-jobs/mcp", nil, []string{"tenants", "acme-corp", "projects", "night-jobs"}},
		{"https://example.com/api/v1beta/2024-06-01/mcp?transport=streamable", nil, []string{"v1beta", "2024-06-01", "streamable"}},
		{"https://example.com/github/ghp_A1b2C3d4E5f6G7h8I9j0/mcp", []string{"ghp_A1b2C3d4E5f6G7h8I9j0"}, []string{"github"}},
	} {
		Remember(c.url)
		text := "calling workspace acme-corp night-jobs tenants projects v1beta 2024-06-01 streamable transport sse true " +
			"composio github services hooks api mcp s " + strings.Join(c.secrets, " ")
		got := redact.String(text)
		for _, s := range c.secrets {
			if strings.Contains(got, s) {
				t.Errorf("Remember(%q): String left the secret %q: %q", c.url, s, got)
			}
		}
		for _, w := range c.words {
			if !strings.Contains(got, w) {
				t.Errorf("Remember(%q): String hid the word %q: %q", c.url, w, got)
			}
		}
		if shown := Elide(c.url); len(c.secrets) > 0 && strings.Contains(shown, c.secrets[0]) {
			t.Errorf("Elide(%q) = %q shows the secret", c.url, shown)
		}
	}
	if shown := Elide("https://example.com/v1/workspace/mcp"); shown != "https://example.com/…" {
		t.Errorf("Elide still elides an unknown path: got %q", shown)
	}
}
