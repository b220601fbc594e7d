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
