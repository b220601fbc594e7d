package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// doctor names what each stdio server of the batch gets, values masked.
func TestServerEnvShowsNamesNotValues(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "night.env"), []byte("ALPHA_API_KEY=alphaQ7w3Zr9Lk2Mx5Tb8\nBETA_API_KEY=betaH4n6Vc1Ds8Pq3Wy7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	batch := filepath.Join(dir, "night.yaml")
	if err := os.WriteFile(batch, []byte(`version: 1
name: envs
state_dir: ./state
env_file: ./night.env
servers:
  alpha: {command: /bin/cat, env: {ALPHA_API_KEY: "${ALPHA_API_KEY}"}}
  web: {type: http, url: "https://example.com/mcp"}
jobs:
  - {name: j, prompt: hi, servers: [alpha]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "ANTHROPIC_API_KEY=agentM1n4Bv7Cx0Zl3Kj"}
	checks := Run(context.Background(), Options{BatchFile: batch, Home: dir, Cwd: dir,
		Getenv: func(k string) (string, bool) {
			for _, kv := range env {
				if n, v, ok := strings.Cut(kv, "="); ok && n == k {
					return v, true
				}
			}
			return "", false
		}, Environ: env, ClaudeBin: "/bin/true"})
	var got []string
	for _, c := range checks {
		if c.ID == "server-env" {
			got = append(got, c.Detail)
		}
	}
	if len(got) != 1 {
		t.Fatalf("want one server-env line (alpha; web is not started), got %q", got)
	}
	want := `"alpha" gets its own ALPHA_API_KEY=` + maskedValue + ` and the base variables (HOME, PATH); not the 2 other variables of the session's environment`
	if got[0] != want {
		t.Errorf("got  %s\nwant %s", got[0], want)
	}
	for _, secret := range []string{"alphaQ7w3Zr9Lk2Mx5Tb8", "betaH4n6Vc1Ds8Pq3Wy7", "agentM1n4Bv7Cx0Zl3Kj"} {
		if strings.Contains(got[0], secret) {
			t.Errorf("doctor shows a value: %s", got[0])
		}
	}
}
