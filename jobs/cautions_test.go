package jobs

import (
	"os"
	"path/filepath"
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
		dirs                []string
	}{
		{"an API key written in env", head + "env:\n  ANTHROPIC_API_KEY: sk-ant-api03-written-here\n" + oneJob, "", 0,
			"n.yaml:4: env.ANTHROPIC_API_KEY: a secret written in the batch file itself", nil},
		{"a key taken from a variable is fine", head + "env:\n  ANTHROPIC_API_KEY: ${KEY:-x}\n" + oneJob, "", 0, "", nil},
		{"a literal token in a server's env", head + "servers:\n  s: {command: /bin/true, env: {NOTES_TOKEN: tok-literal-1234}}\n" + oneJob, "", 0,
			"servers.s.env.NOTES_TOKEN: a secret written in the batch file itself", nil},
		{"a literal bearer header", head + "servers:\n  s: {type: http, url: \"http://x\", headers: {Authorization: \"Bearer abc123\"}}\n" + oneJob, "", 0,
			"servers.s.headers.Authorization: a secret written in the batch file itself", nil},
		{"a plain variable is fine", head + "env:\n  LOG_LEVEL: debug\n" + oneJob, "", 0, "", nil},
		{"a world-readable env_file", head + "env_file: ./night.env\n" + oneJob, "X=1\n", 0o644, "can be read by other users (mode 0644): chmod 600", nil},
		// Issue 21: the README's old layout let one Read give the model
		// every env_file value.
		{"an env_file where the jobs run", head + "env_file: ./night.env\n" + oneJob, "X=1\n", 0o600,
			"n.yaml:3: env_file: " + "%DIR%/night.env is inside %DIR%, where job a runs: nightwatch denies the model's Read and Edit of it", nil},
		{"a private env_file outside the jobs' folder is fine", head + "env_file: ./night.env\njobs:\n  - {name: a, prompt: hi, cwd: ./work}\n",
			"X=1\n", 0o600, "", []string{"work"}},
		{"the state folder where a job runs commands", head + "state_dir: ./state\njobs:\n  - {name: a, prompt: hi, allowed_tools: [Bash]}\n  - {name: b, prompt: hi}\n",
			"", 0, "n.yaml:3: state_dir: %DIR%/state is inside %DIR%, where job a may run shell commands", nil},
		{"the state folder where no job runs commands is fine", head + "state_dir: ./state\n" + oneJob, "", 0, "", nil},
		{"a reconnect in shell syntax", head + "servers:\n  s: {command: /bin/true, reconnect: \"pm2 restart s && sleep 1\"}\n" + oneJob, "", 0,
			"servers.s.reconnect: relies on shell syntax (&&), and nightwatch runs no shell: write it as sh -c 'pm2 restart s && sleep 1'", nil},
		{"a verify program that does not exist", head + "jobs:\n  - {name: a, prompt: hi, verify: [./nope.sh]}\n", "", 0,
			"jobs[0].verify[0]: ", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.envMode != 0 && runtime.GOOS == "windows" {
				t.Skip("Windows files carry ACLs, not mode bits")
			}
			dir := t.TempDir()
			fakeExe(t, dir, "claude")
			for _, d := range c.dirs {
				if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			want := strings.ReplaceAll(c.want, "%DIR%", dir)
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
			case want == "" && got != "":
				t.Errorf("unexpected caution: %s", got)
			case want != "" && !strings.Contains(got, want):
				t.Errorf("cautions %q lack %q", got, want)
			}
			for _, secret := range []string{"sk-ant-api03-written-here", "tok-literal-1234", "abc123"} {
				if strings.Contains(got, secret) {
					t.Errorf("a caution shows the secret: %s", got)
				}
			}
		})
	}
}
