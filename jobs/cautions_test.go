package jobs

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// Mistakes a new user makes that do not stop a night are said, with the
// line and the fix: before, preflight and doctor said ok to each.
func TestCautions(t *testing.T) {
	cases := []struct {
		name, yaml, envFile string
		envMode             os.FileMode
		want                string // "" = no caution
	}{
		{"an API key written in env", head + "env:\n  ANTHROPIC_API_KEY: sk-ant-api03-written-here\n" + oneJob, "", 0,
			"n.yaml:4: env.ANTHROPIC_API_KEY: a secret written in the batch file itself"},
		{"a key taken from a variable is fine", head + "env:\n  ANTHROPIC_API_KEY: ${KEY:-x}\n" + oneJob, "", 0, ""},
		{"a literal token in a server's env", head + "servers:\n  s: {command: /bin/true, env: {NOTES_TOKEN: tok-literal-1234}}\n" + oneJob, "", 0,
			"servers.s.env.NOTES_TOKEN: a secret written in the batch file itself"},
		{"a literal bearer header", head + "servers:\n  s: {type: http, url: \"http://x\", headers: {Authorization: \"Bearer abc123\"}}\n" + oneJob, "", 0,
			"servers.s.headers.Authorization: a secret written in the batch file itself"},
		{"a plain variable is fine", head + "env:\n  LOG_LEVEL: debug\n" + oneJob, "", 0, ""},
		{"a world-readable env_file", head + "env_file: ./night.env\n" + oneJob, "X=1\n", 0o644, "can be read by other users (mode 0644): chmod 600"},
		{"a private env_file is fine", head + "env_file: ./night.env\n" + oneJob, "X=1\n", 0o600, ""},
		{"a reconnect in shell syntax", head + "servers:\n  s: {command: /bin/true, reconnect: \"pm2 restart s && sleep 1\"}\n" + oneJob, "", 0,
			"servers.s.reconnect: relies on shell syntax (&&), and nightwatch runs no shell: write it as sh -c 'pm2 restart s && sleep 1'"},
		{"a verify program that does not exist", head + "jobs:\n  - {name: a, prompt: hi, verify: [./nope.sh]}\n", "", 0,
			"jobs[0].verify[0]: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.envMode != 0 && runtime.GOOS == "windows" {
				t.Skip("Windows files carry ACLs, not mode bits")
			}
			dir := t.TempDir()
			fakeExe(t, dir, "claude")
			if c.envFile != "" {
				p := writeFile(t, dir, "night.env", c.envFile)
				if err := os.Chmod(p, c.envMode); err != nil {
					t.Fatal(err)
				}
			}
			path := writeFile(t, dir, "n.yaml", c.yaml)
			b, err := Load(path, environ(map[string]string{"PATH": dir}))
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(b.Cautions, "\n")
			switch {
			case c.want == "" && got != "":
				t.Errorf("unexpected caution: %s", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("cautions %q lack %q", got, c.want)
			}
			for _, secret := range []string{"sk-ant-api03-written-here", "tok-literal-1234", "abc123"} {
				if strings.Contains(got, secret) {
					t.Errorf("a caution shows the secret: %s", got)
				}
			}
		})
	}
}
