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
