package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
func (e *env) entrySecrets(context.Context) []Check {
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
	for _, ent := range e.installedEntries() {
		var names []string
		for k, v := range ent.env {
			if v == "" || k == "PATH" || k == "HOME" {
				continue
			}
			if envFile[k] || (redact.SensitiveName(k) && !redact.NotCredential(k)) || slices.Contains(secretValues, v) {
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
		out = append(out, ok("entry-secrets", entrySecretsTitle, "no installed launchd agent or systemd unit of nightwatch holds a secret value"))
	}
	return out
}
