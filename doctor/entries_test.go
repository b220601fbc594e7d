package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// An old entry (installed by the release that copied env_file values into
// the plist and the unit) is a failing check that names the variables,
// never their values, with the fix: install again. Before: doctor read
// these entries for the login check only and said nothing of the secrets
// they hold.
func TestEntrySecretsInAnOldPlistAndUnit(t *testing.T) {
	const plain, key = "regionP4o7I1u3Y6t9", "storeKeyM2n5B8v1C4x7"
	s := newSandbox(t)
	write(t, filepath.Join(s.home, "night.env"), "STORE_REGION="+plain+"\nSTORE_API_KEY="+key+"\nLOG_LEVEL=info\n")
	s.batch = filepath.Join(s.home, "night.yaml")
	write(t, s.batch, fmt.Sprintf(`version: 1
name: entries
state_dir: %s
env_file: ./night.env
agent: {command: %s}
servers:
  notes: {command: /bin/true}
jobs:
  - {name: only, prompt: "say hi", servers: [notes]}
`, filepath.Join(s.home, "state"), s.claude))
	plist := filepath.Join(s.home, "Library", "LaunchAgents", "dev.nightwatch.entries.plist")
	write(t, plist, fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0">
<dict>
  <key>Label</key><string>dev.nightwatch.entries</string>
  <key>ProgramArguments</key>
  <array><string>/usr/local/bin/nightwatch</string><string>run</string><string>%s</string></array>
  <key>EnvironmentVariables</key>
  <dict>
    <key>PATH</key><string>/usr/bin:/bin</string>
    <key>HOME</key><string>%s</string>
    <key>STORE_REGION</key><string>%s</string>
    <key>STORE_API_KEY</key><string>%s</string>
  </dict>
</dict>
</plist>
`, s.batch, s.home, plain, key))
	unit := filepath.Join(s.home, ".config", "systemd", "user", "nightwatch-entries.service")
	write(t, unit, fmt.Sprintf("[Service]\nType=oneshot\nEnvironment=\"PATH=/usr/bin:/bin\"\nEnvironment=\"STORE_REGION=%s\"\nEnvironment=\"RENAMED_VALUE=%s\"\nExecStart=/usr/local/bin/nightwatch run %s\n", plain, key, s.batch))

	checks := s.run()
	c := mustFind(t, checks, "entry-secrets", Fail, plist, "STORE_API_KEY, STORE_REGION")
	if !strings.Contains(c.Fix, "nightwatch install launchd "+s.batch+" again") {
		t.Errorf("launchd fix: %s", c.Fix)
	}
	c = mustFind(t, checks, "entry-secrets", Fail, unit, "RENAMED_VALUE, STORE_REGION")
	if !strings.Contains(c.Fix, "nightwatch install systemd "+s.batch+" again") {
		t.Errorf("systemd fix: %s", c.Fix)
	}
	if out := dump(checks); strings.Contains(out, plain) || strings.Contains(out, key) {
		t.Errorf("doctor shows a secret value:\n%s", out)
	}
	if !Failed(checks) {
		t.Error("Failed = false")
	}
}

// A clean entry (today's installer: PATH and HOME) is ok.
func TestEntrySecretsCleanEntry(t *testing.T) {
	s := newSandbox(t)
	unit := filepath.Join(s.home, ".config", "systemd", "user", "nightwatch-clean.service")
	write(t, unit, "[Service]\nEnvironment=\"PATH=/usr/bin:/bin\"\nEnvironment=\"HOME=/home/u\"\nEnvironment=\"LOG_LEVEL=info\"\nExecStart=/usr/local/bin/nightwatch run /x.yaml\n")
	mustFind(t, s.run(), "entry-secrets", OK)
}

// A crontab line of an older install that assigns env_file values before
// `nightwatch run` (the line `ps` showed all night): a failing check,
// names only, fix: install cron again. The crontab is read through a fake
// `crontab -l` in the operator's PATH.
func TestEntrySecretsInAnOldCrontabLine(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("cron is a Unix scheduler")
	}
	const plain, key = "regionQ9w8E7r6T5y4", "cronKeyA1s2D3f4G5h6"
	s := newSandbox(t)
	write(t, filepath.Join(s.home, "night.env"), "STORE_REGION="+plain+"\nSTORE_API_KEY="+key+"\n")
	s.batch = filepath.Join(s.home, "night.yaml")
	write(t, s.batch, fmt.Sprintf(`version: 1
name: entries
state_dir: %s
env_file: ./night.env
agent: {command: %s}
servers:
  notes: {command: /bin/true}
jobs:
  - {name: only, prompt: "say hi", servers: [notes]}
`, filepath.Join(s.home, "state"), s.claude))
	line := fmt.Sprintf("0 2 * * * mkdir -p '/tmp/l' && cd '/tmp' && PATH='/usr/bin:/bin' STORE_REGION='%s' STORE_API_KEY='%s' '/usr/local/bin/nightwatch' run '%s' >> '/tmp/l/cron.log' 2>&1 # nightwatch:entries", plain, key, s.batch)
	crontab := filepath.Join(s.home, "bin", "crontab")
	write(t, crontab, "#!/bin/sh\ncat <<'EOF'\n# m h dom mon dow command\n"+line+"\n0 3 * * * /usr/bin/backup\nEOF\n")
	if err := os.Chmod(crontab, 0o755); err != nil {
		t.Fatal(err)
	}
	checks := s.run()
	c := mustFind(t, checks, "entry-secrets", Fail, "crontab line # nightwatch:entries", "STORE_API_KEY, STORE_REGION")
	if !strings.Contains(c.Fix, "nightwatch install cron "+s.batch+" again") {
		t.Errorf("cron fix: %s", c.Fix)
	}
	if out := dump(checks); strings.Contains(out, plain) || strings.Contains(out, key) {
		t.Errorf("doctor shows a secret value:\n%s", out)
	}
}

// An entry that holds a value a server's definition carries (its URL with
// a secret path, taken from the shell under a plain name) fails: doctor
// once said ok because the name was not "sensitive".
func TestEntrySecretsServerValueUnderAPlainName(t *testing.T) {
	const url = "https://hooks.example/mcp/tok-5d2a7e9c31"
	s := newSandbox(t)
	s.env["WEB_URL"] = url
	s.batch = filepath.Join(s.home, "night.yaml")
	write(t, s.batch, fmt.Sprintf(`version: 1
name: entries
state_dir: %s
agent: {command: %s}
servers:
  web: {type: http, url: "${WEB_URL}"}
jobs:
  - {name: only, prompt: "say hi", servers: [web]}
`, filepath.Join(s.home, "state"), s.claude))
	unit := filepath.Join(s.home, ".config", "systemd", "user", "nightwatch-entries.service")
	write(t, unit, fmt.Sprintf("[Service]\nType=oneshot\nEnvironment=\"WEB_URL=%s\"\nExecStart=/usr/local/bin/nightwatch run %s\n", url, s.batch))
	mustFind(t, s.run(), "entry-secrets", Fail, unit, "WEB_URL")
}
