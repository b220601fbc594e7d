package redact

import (
	"strings"
	"testing"
)

func TestRememberedSecretsAreRemovedEverywhere(t *testing.T) {
	t.Cleanup(forgetAll)
	alphaKey := "alpha-key-Z9y8X7w6V5u4"
	betaToken := "beta-tok-Q1w2E3r4T5y6"
	envFileSecret := "envfile-P0o9I8u7Y6"
	Remember(alphaKey, "ab") // too short: ignored, never shreds text
	RememberEnv([]string{"BETA_TOKEN=" + betaToken, "HOME=/home/u", "DB_PASSWORD=" + envFileSecret})

	// A server crashing with other servers' keys in its text: the caller
	// knows none of them.
	text := "config alpha_api is " + alphaKey + "; beta uses " + betaToken + " and db " + envFileSecret + " from /home/u"
	got := String(text)
	for _, s := range []string{alphaKey, betaToken, envFileSecret} {
		if strings.Contains(got, s) {
			t.Errorf("String left %q in %q", s, got)
		}
	}
	if !strings.Contains(got, "/home/u") || !strings.Contains(got, "config alpha_api is ") {
		t.Errorf("String removed ordinary text: %q", got)
	}
}

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
		"not a url":                                          Marker,
		"https://mcp.example.com/" + strings.Repeat("x", 40): "https://mcp.example.com/…",
	} {
		if got := URL(raw); got != want {
			t.Errorf("URL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestRememberURLRedactsItsSecretParts(t *testing.T) {
	t.Cleanup(forgetAll)
	RememberURL("https://bob:pw-hunter22@mcp.example.com/api/mcp/s/a8F3kQ9zL2xW/mcp?key=qk-77665544")
	msg := "POST https://bob:pw-hunter22@mcp.example.com/api/mcp/s/a8F3kQ9zL2xW/mcp?key=qk-77665544 failed"
	got := String(msg)
	for _, s := range []string{"pw-hunter22", "a8F3kQ9zL2xW", "qk-77665544"} {
		if strings.Contains(got, s) {
			t.Errorf("String left %q: %q", s, got)
		}
	}
	if !strings.Contains(got, "mcp.example.com/api/mcp/s/") {
		t.Errorf("String removed the plain parts: %q", got)
	}
}

// The shell's PWD and the desktop's session variables are not secrets:
// remembering them would redact the working folder from every path and
// every "user" from every text.
func TestRememberEnvSkipsShellVariables(t *testing.T) {
	t.Cleanup(forgetAll)
	forgetAll()
	RememberEnv([]string{"PWD=/home/user/night", "OLDPWD=/home/user", "XDG_SESSION_CLASS=user",
		"DESKTOP_SESSION=ubuntu", "NOTES_API_KEY=notesKeyZ1x2C3v4"})
	got := String("cache: /home/user/night/.nightwatch/cache.json on ubuntu; key notesKeyZ1x2C3v4")
	if want := "cache: /home/user/night/.nightwatch/cache.json on ubuntu; key " + Marker; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// RememberURL remembers only the parts of a URL that look like secrets
// (issue 12): real secret-URL shapes are redacted from every text, and an
// ordinary path or query ("workspace", "sse") stays readable everywhere,
// while URL still elides both from a URL shown or stored. Before: every
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
		forgetAll()
		RememberURL(c.url)
		text := "calling workspace acme-corp night-jobs tenants projects v1beta 2024-06-01 streamable transport sse true " +
			"composio github services hooks api mcp s " + strings.Join(c.secrets, " ")
		got := String(text)
		for _, s := range c.secrets {
			if strings.Contains(got, s) {
				t.Errorf("RememberURL(%q): String left the secret %q: %q", c.url, s, got)
			}
		}
		for _, w := range c.words {
			if !strings.Contains(got, w) {
				t.Errorf("RememberURL(%q): String hid the word %q: %q", c.url, w, got)
			}
		}
		if shown := URL(c.url); len(c.secrets) > 0 && strings.Contains(shown, c.secrets[0]) {
			t.Errorf("URL(%q) = %q shows the secret", c.url, shown)
		}
	}
	forgetAll()
	if shown := URL("https://example.com/v1/workspace/mcp"); shown != "https://example.com/…" {
		t.Errorf("URL still elides an unknown path: got %q", shown)
	}
}

func TestSecretSegment(t *testing.T) {
	for s, want := range map[string]bool{
		"a8F3kQ9zL2xW": true, "3f2c9b1e-8d4a-4f6b-9c2e-7a1d5e8b0f34": true, "sk-ant-api03-abcdefgh": true,
		"eyJhbGciOiJIUzI1NiJ9": true, "deadbeefcafe0123456789": true, "QmFzZTY0TG9va2luZ1Rva2Vu": true,
		"workspace": false, "v1beta": false, "2024-06-01": false, "acme-corp": false, "night-jobs": false,
		"streamable": false, "notifications": false, "mcp": false, "organizations": false,
	} {
		if got := SecretSegment(s); got != want {
			t.Errorf("SecretSegment(%q) = %v, want %v", s, got, want)
		}
	}
}
