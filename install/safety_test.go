package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// everything is what a plan would put on disk or show: files, crontab
// line and the dry-run print.
func everything(p *Plan) string {
	var b strings.Builder
	for _, f := range p.Files {
		b.Write(f.Content)
	}
	b.WriteString(p.CrontabLine)
	return b.String()
}

func TestFailOpenDropped(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(string(kind), func(t *testing.T) {
			f := newFixture(t, "b")
			f.batch.Env["ECC_MCP_HEALTH_FAIL_OPEN"] = "1"
			f.env["NIGHTWATCH_FAIL_OPEN"] = "true"
			// Even a batch that references the flag does not get it.
			if err := os.WriteFile(f.batch.File, []byte("x: ${NIGHTWATCH_FAIL_OPEN}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			p := f.plan(t, kind)
			if s := everything(p); strings.Contains(s, "FAIL_OPEN") {
				t.Errorf("fail-open written:\n%s", s)
			}
			notes := strings.Join(p.Notes, "\n")
			for _, name := range []string{"NIGHTWATCH_FAIL_OPEN", "ECC_MCP_HEALTH_FAIL_OPEN"} {
				if !strings.Contains(notes, name+" is not written") {
					t.Errorf("no note about %s:\n%s", name, notes)
				}
			}
		})
	}
	// fail_open in the batch itself cannot be dropped: it is named.
	f := newFixture(t, "b")
	f.batch.FailOpen = true
	if p := f.plan(t, Launchd); !strings.Contains(strings.Join(p.Notes, "\n"), "fail_open: true") {
		t.Errorf("no warning for fail_open in the batch: %q", p.Notes)
	}
}

// No secret value goes into a schedule entry (a plist, a unit, a crontab
// line that `ps` shows through sh -c): the night reads its env_file itself,
// and a secret the batch takes from the shell is named, with where to put
// it, never written.
func TestSecretsNeverWritten(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(string(kind), func(t *testing.T) {
			table := fakeCrontab(t)
			f := newFixture(t, "b")
			envFile := filepath.Join(f.batch.Dir, "night.env")
			if err := os.WriteFile(envFile, []byte("DB_PASSWORD=pw-from-env-file-77\nREGION=${REGION}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			f.batch.EnvFile = envFile
			f.batch.Env["DB_PASSWORD"] = "pw-from-env-file-77"
			f.env["REGION"] = "eu-west-1" // taken from the shell, not secret
			p := f.plan(t, kind)
			if err := Apply(context.Background(), p, (&recorder{}).run); err != nil {
				t.Fatal(err)
			}
			written := everything(p) + printed(p)
			if kind == Cron {
				written += readFile(t, table)
			}
			for _, secret := range []string{f.env["API_KEY"], f.env["GITHUB_TOKEN"], "pw-from-env-file-77"} {
				if strings.Contains(written, secret) {
					t.Errorf("a secret value is in the %s entry or its print: %s", kind, secret)
				}
			}
			switch notes := strings.Join(p.Notes, "\n"); {
			case kind == Schtasks:
				// Task Scheduler has no per-task environment: the plain
				// variable is named, not written.
				if strings.Contains(everything(p), "eu-west-1") || !strings.Contains(notes, "NOT carried into the task (Task Scheduler has none): GH_HOST, REGION;") {
					t.Errorf("REGION: written, or not named in the notes:\n%s", notes)
				}
			case !strings.Contains(everything(p), "eu-west-1"):
				t.Errorf("REGION, a plain variable the batch takes from the shell, was not written")
			}
			if strings.Contains(written, "UNRELATED") {
				t.Error("a variable the batch does not reference was written")
			}
			notes := strings.Join(p.Notes, "\n")
			if !strings.Contains(notes, "NOT written") || !strings.Contains(notes, "API_KEY, GITHUB_TOKEN") || !strings.Contains(notes, envFile) {
				t.Errorf("notes do not name the secrets and the env_file to put them in:\n%s", notes)
			}
			for _, file := range p.Files {
				if fi, err := os.Stat(file.Path); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("%s: %v, mode %v; want 0600", file.Path, err, fi.Mode().Perm())
				}
			}
		})
	}
}

func TestPathsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*fixture, *Options)
		want string
	}{
		{"relative binary", func(_ *fixture, o *Options) { o.Binary = "bin/nightwatch" }, "relative"},
		{"binary with ~", func(_ *fixture, o *Options) { o.Binary = "~/bin/nightwatch" }, "~"},
		{"missing binary", func(f *fixture, o *Options) { o.Binary = filepath.Join(f.root, "nope") }, "no such file"},
		{"go run binary", func(_ *fixture, o *Options) { o.Binary = "/tmp/go-build123/b001/exe/nightwatch" }, "go run"},
		{"relative batch", func(f *fixture, _ *Options) { f.batch.File = "night.yaml" }, "relative"},
		{"newline in the batch's path", func(f *fixture, _ *Options) {
			f.batch.File = filepath.Join(f.root, "x\n* * * * * touch /tmp/pwned\n", "night.yaml")
		}, "control character"},
		{"newline in the binary's path", func(f *fixture, o *Options) { o.Binary = filepath.Join(f.root, "bin\nevil") }, "control character"},
		{"batch dir with ~", func(f *fixture, _ *Options) { f.batch.Dir = "/Users/me/~/night" }, "~"},
		{"log dir with ~", func(_ *fixture, o *Options) { o.LogDir = "~/logs" }, "~"},
		{"relative log dir", func(_ *fixture, o *Options) { o.LogDir = "logs" }, "relative"},
		{"relative home", func(_ *fixture, o *Options) { o.Home = "home" }, "relative"},
		{"no batch", func(_ *fixture, o *Options) { o.Batch = nil }, "no batch"},
		{"newline in a value", func(f *fixture, _ *Options) {
			f.env["REGION"] = "eu\nX"
			if err := os.WriteFile(f.batch.File, []byte("x: ${REGION}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "b")
			o := f.options()
			tc.edit(f, &o)
			for _, kind := range Kinds {
				_, err := PlanInstall(kind, o)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: err = %v, want it to mention %q", kind, err, tc.want)
				}
			}
		})
	}
	if _, err := PlanInstall("upstart", newFixture(t, "b").options()); err == nil {
		t.Error("unknown kind accepted")
	}
}

// TestFromLoadedBatch installs a batch read by jobs.Load, the way the
// command does: PATH from the batch's env, ~ in its paths already resolved.
func TestFromLoadedBatch(t *testing.T) {
	f := newFixture(t, "b")
	yaml := `version: 1
name: loaded
schedule: "30 1 * * 1-5"
state_dir: ./state
env:
  PATH: "/opt/tools/bin:relative/bin:${PATH}"
  MODE: night
agent: {command: /bin/sh}
servers:
  s:
    command: /bin/cat
    requires_env: [SERVICE_API_KEY]
jobs:
  - name: j
    prompt: "say ${NOT_EXPANDED}"
    servers: [s]
`
	if err := os.WriteFile(f.batch.File, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PATH": "/usr/bin:/bin", "HOME": f.home, "SERVICE_API_KEY": "sk-loaded-123456"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	b, err := jobs.LoadWith(f.batch.File, getenv, jobs.LoadOptions{AgentOptional: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanInstall(Launchd, Options{Binary: f.bin, Batch: b, Home: f.home, UID: 501, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	pl := decodePlist(t, p.Files[0].Content)
	envs := pl["EnvironmentVariables"].(map[string]any)
	if envs["PATH"] != "/opt/tools/bin:/usr/bin:/bin" {
		t.Errorf("PATH = %q", envs["PATH"])
	}
	// MODE is the batch's own (the night reads it); SERVICE_API_KEY is a
	// secret from the shell: neither is written, the key is named.
	if _, ok := envs["SERVICE_API_KEY"]; ok || envs["MODE"] != nil || envs["HOME"] != f.home {
		t.Errorf("env = %v", envs)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "NOT written (secrets never go into a schedule entry): SERVICE_API_KEY") {
		t.Errorf("the secret from the shell is not named: %q", p.Notes)
	}
	if pl["StandardOutPath"] != filepath.Join(f.batch.Dir, "state", "logs", "launchd.out.log") {
		t.Errorf("StandardOutPath = %v", pl["StandardOutPath"])
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "relative/bin") {
		t.Errorf("dropped PATH entry not noted: %q", p.Notes)
	}
}

func TestPrint(t *testing.T) {
	f := newFixture(t, "b")
	out := printed(f.plan(t, Launchd))
	for _, want := range []string{
		"# nightwatch launchd plan",
		"--- write " + filepath.Join(f.home, "Library", "LaunchAgents", "dev.nightwatch.nightly.plist") + " (mode 0600)",
		"<key>ProgramArguments</key>",
		"launchctl bootstrap gui/501 ",
		"--- notes",
		"mkdir -p -m 0700 " + filepath.Join(f.batch.StateDir, "logs"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("print lacks %q:\n%s", want, out)
		}
	}
	un, err := PlanUninstall(Cron, f.options())
	if err != nil {
		t.Fatal(err)
	}
	if out := printed(un); !strings.Contains(out, "# nightwatch:nightly") || !strings.Contains(out, "(nothing)") {
		t.Errorf("uninstall print:\n%s", out)
	}
}

// A required variable the server's own env gives a default
// (${NOTES_API_KEY:-demo}) loads without the shell's value, so the night
// does not stop at preflight: no warning says it would. A required
// variable nothing gives still gets the warning.
func TestRequiredWithDefaultIsNoWarning(t *testing.T) {
	f := newFixture(t, "d")
	yaml := `version: 1
name: defaults
schedule: "0 2 * * *"
state_dir: ./state
agent: {command: /bin/sh}
servers:
  notes:
    command: /bin/cat
    env: {NOTES_API_KEY: "${NOTES_API_KEY:-demo-notes-key}"}
    requires_env: [NOTES_API_KEY]
jobs:
  - {name: j, prompt: hi, servers: [notes]}
`
	if err := os.WriteFile(f.batch.File, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PATH": "/usr/bin:/bin", "HOME": f.home}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	b, err := jobs.LoadWith(f.batch.File, getenv, jobs.LoadOptions{AgentOptional: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanInstall(Cron, Options{Binary: f.bin, Batch: b, Home: f.home, UID: 501, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(p.Notes, "\n"); strings.Contains(notes, "NOTES_API_KEY") {
		t.Errorf("a required variable with a default is warned about:\n%s", notes)
	}

	// The fixture's batch requires API_KEY and nothing gives it.
	delete(f.env, "API_KEY")
	if notes := strings.Join(f.plan(t, Cron).Notes, "\n"); !strings.Contains(notes, "WARNING: API_KEY is required") {
		t.Errorf("an unset required variable is not warned about:\n%s", notes)
	}
}

// A cluster's connection string never goes into a schedule entry, on any
// scheduler: set only in the installer's shell, it is named in a note
// that says where it belongs; set nowhere, the note says the night
// cannot reach its database.
func TestClusterConnectionStringIsNeverWritten(t *testing.T) {
	const dsn = "postgres://nw:pw-9f2c1e@db.lan:5432/nw"
	for _, kind := range []Kind{Launchd, Systemd, Cron, Schtasks} {
		t.Run(string(kind), func(t *testing.T) {
			f := newFixture(t, "night")
			f.batch.Cluster = &jobs.Cluster{DatabaseEnv: "NIGHTWATCH_DATABASE_URL"}
			f.env["NIGHTWATCH_DATABASE_URL"] = dsn
			p := f.plan(t, kind)
			for _, file := range p.Files {
				if strings.Contains(string(file.Content), "pw-9f2c1e") || strings.Contains(string(file.Content), "NIGHTWATCH_DATABASE_URL") {
					t.Errorf("%s holds the connection string:\n%s", file.Path, file.Content)
				}
			}
			if strings.Contains(p.CrontabLine, "pw-9f2c1e") {
				t.Errorf("the crontab line holds the connection string: %s", p.CrontabLine)
			}
			if notes := strings.Join(p.Notes, "\n"); !strings.Contains(notes, "NOT written") || !strings.Contains(notes, "NIGHTWATCH_DATABASE_URL") {
				t.Errorf("no note says the connection string belongs in the env_file:\n%s", notes)
			}
			delete(f.env, "NIGHTWATCH_DATABASE_URL")
			if notes := strings.Join(f.plan(t, kind).Notes, "\n"); !strings.Contains(notes, "cannot reach its database") {
				t.Errorf("no warning that the night has no connection string:\n%s", notes)
			}
		})
	}
}

// A variable a server's definition carries (a URL with a secret path, a
// header, an env value) is that server's secret whatever its name: it
// stays out of every entry and the notes say where to put it.
func TestServerSecretsUnderPlainNamesNeverWritten(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(string(kind), func(t *testing.T) {
			fakeCrontab(t)
			f := newFixture(t, "b")
			const url, header, envVal = "https://hooks.example/mcp/tok-7c1e9a2b55", "Bearer hdr-value-0042", "plain-env-value-9"
			f.env["WEB_URL"], f.env["WEB_AUTH"], f.env["WEB_REGION"] = url, header, envVal
			yaml := "name: nightly\nservers:\n  web: {type: http, url: \"${WEB_URL}\", headers: {Authorization: \"${WEB_AUTH}\"}, env: {R: \"${WEB_REGION}\"}}\n"
			if err := os.WriteFile(f.batch.File, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			f.batch.Servers = append(f.batch.Servers, &jobs.Server{Name: "web", MCP: mcpconfig.Server{Name: "web", Transport: mcpconfig.HTTP,
				URL: url, Headers: map[string]string{"Authorization": header}, Env: map[string]string{"R": envVal}}})
			p := f.plan(t, kind)
			written := everything(p) + printed(p)
			for _, v := range []string{url, "tok-7c1e9a2b55", "hdr-value-0042", envVal} {
				if strings.Contains(written, v) {
					t.Errorf("the %s entry or its print holds a server's value %q", kind, v)
				}
			}
			if notes := strings.Join(p.Notes, "\n"); !strings.Contains(notes, "WEB_AUTH, WEB_REGION, WEB_URL") {
				t.Errorf("the notes do not name the server's variables:\n%s", notes)
			}
		})
	}
}
