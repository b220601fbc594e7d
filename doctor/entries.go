package doctor

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/batchsecrets"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

const entrySecretsTitle = "schedule entries hold no secret"

// entrySecretsMinLen is the shortest value matched against the batch's
// secrets by value (a shorter one is a setting: "info", "30000").
const entrySecretsMinLen = 8

// entrySecrets looks into nightwatch's installed scheduler entries (the
// launchd agents and systemd units installedEntries reads) for a secret
// value: the previous release copied every env_file value into the plist
// or the unit, where backup tools, `ps` and copies between machines read
// it. A variable is a secret when env_file sets it, when its name is
// sensitive (KEY, TOKEN…), or when its value is one the batch holds for
// such a variable. The check names the variables, never their values; the
// fix is to install again (the installer writes no secret any more, and
// `run` reads env_file itself).
func (e *env) entrySecrets(ctx context.Context) []Check {
	envFile := map[string]bool{}
	var secretValues []string
	if e.batch != nil {
		for _, k := range e.batch.EnvFileKeys {
			envFile[k] = true
		}
		for k, v := range e.batch.Env {
			if (envFile[k] || redact.SensitiveName(k)) && len(v) >= entrySecretsMinLen {
				secretValues = append(secretValues, v)
			}
		}
	}
	var out []Check
	for _, ent := range append(e.installedEntries(), e.cronEntries(ctx)...) {
		var names []string
		for k, v := range ent.env {
			if v == "" || k == "PATH" || k == "HOME" {
				continue
			}
			if envFile[k] || (redact.SensitiveName(k) && !redact.NotCredential(k)) || slices.Contains(secretValues, v) ||
				batchsecrets.ServerUses(e.batch, v) != "" {
				names = append(names, k)
			}
		}
		if len(names) == 0 {
			continue
		}
		slices.Sort(names)
		batch := "FILE"
		if e.batch != nil {
			batch = e.batch.File
		}
		out = append(out, Check{ID: "entry-secrets", Title: entrySecretsTitle, Level: Fail,
			Detail: fmt.Sprintf("%s (%s) holds the value of %s in clear text (written by an older nightwatch install; backup tools and copies of the file read it)",
				ent.name, ent.path, strings.Join(names, ", ")),
			Fix: fmt.Sprintf("nightwatch install %s %s again: the new entry names the batch and its env_file, and carries no secret value", ent.kind, batch)})
	}
	if len(out) == 0 {
		out = append(out, ok("entry-secrets", entrySecretsTitle, "no installed launchd agent, systemd unit or crontab line of nightwatch holds a secret value"))
	}
	return out
}

// cronAssign is one NAME='value' of a crontab line nightwatch installed
// (install/cron.go quotes every word with single quotes, ' as '\”).
var cronAssign = regexp.MustCompile(`(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)='((?:[^']|'\\'')*)'`)

// cronEntries reads the user's crontab (`crontab -l`, found in the
// operator's PATH, at most 5 s) for nightwatch's lines ("# nightwatch:"
// marker) that run this batch (every one without a batch), with the
// variables each line assigns. No crontab command, or no crontab: none.
func (e *env) cronEntries(ctx context.Context) []installedEntry {
	if runtime.GOOS == "windows" {
		return nil
	}
	bin, err := lookPath("crontab", e.Getenv)
	if err != nil {
		return nil
	}
	listed, err := proc.Run(ctx, proc.Spec{Argv: []string{bin, "-l"}, Env: e.Environ, Timeout: 5 * time.Second})
	if err != nil {
		return nil // "no crontab for user" exits 1
	}
	var out []installedEntry
	for _, line := range strings.Split(string(listed.Stdout), "\n") {
		i := strings.Index(line, "# nightwatch:")
		if i < 0 || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		unescaped := strings.ReplaceAll(line, `\%`, "%")
		if e.batch != nil && !strings.Contains(unescaped, e.batch.File) {
			continue
		}
		vars := map[string]string{}
		for _, m := range cronAssign.FindAllStringSubmatch(unescaped[:strings.Index(unescaped, "# nightwatch:")], -1) {
			vars[m[1]] = strings.ReplaceAll(m[2], `'\''`, "'")
		}
		out = append(out, installedEntry{name: "crontab line " + strings.TrimSpace(line[i:]), env: vars, kind: "cron", path: "crontab -l"})
	}
	return out
}
