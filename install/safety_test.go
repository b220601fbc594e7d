package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/jobs"
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

func TestSecrets(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(string(kind), func(t *testing.T) {
			table := fakeCrontab(t)
			f := newFixture(t, "b")
			p := f.plan(t, kind)
			content := everything(p)
			for _, name := range []string{"API_KEY", "GITHUB_TOKEN"} {
				if !strings.Contains(content, f.env[name]) {
					t.Errorf("%s not written: the night would not have it", name)
				}
			}
			if strings.Contains(content, "UNRELATED") {
				t.Error("a variable the batch does not reference was written")
			}
			notes := strings.Join(p.Notes, "\n")
			if !strings.Contains(notes, "API_KEY, GITHUB_TOKEN") {
				t.Errorf("notes do not name the secrets:\n%s", notes)
			}
			out := printed(p)
			for _, name := range []string{"API_KEY", "GITHUB_TOKEN"} {
				if v := f.env[name]; strings.Contains(notes, v) || strings.Contains(out, v) {
					t.Errorf("the value of %s appears in the notes or the dry-run print", name)
				}
			}
			if err := Apply(context.Background(), p, (&recorder{}).run); err != nil {
				t.Fatal(err)
			}
			for _, file := range p.Files {
				if fi, err := os.Stat(file.Path); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("%s: %v, mode %v; want 0600", file.Path, err, fi.Mode().Perm())
				}
			}
			if kind == Cron && !strings.Contains(readFile(t, table), f.env["API_KEY"]) {
				t.Error("crontab lacks the key")
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
		{"batch dir with ~", func(f *fixture, _ *Options) { f.batch.Dir = "/Users/me/~/night" }, "~"},
		{"log dir with ~", func(_ *fixture, o *Options) { o.LogDir = "~/logs" }, "~"},
		{"relative log dir", func(_ *fixture, o *Options) { o.LogDir = "logs" }, "relative"},
		{"relative home", func(_ *fixture, o *Options) { o.Home = "home" }, "relative"},
		{"no batch", func(_ *fixture, o *Options) { o.Batch = nil }, "no batch"},
		{"newline in a value", func(f *fixture, _ *Options) { f.batch.Env["LANG"] = "C\nX" }, "control character"},
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
	if envs["SERVICE_API_KEY"] != "sk-loaded-123456" || envs["MODE"] != "night" || envs["HOME"] != f.home {
		t.Errorf("env = %v", envs)
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
