package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/hook/served"
	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/claudesettings"
	"github.com/nightwatch-dev/nightwatch/internal/clirange"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// ServedHookSince is the oldest Claude Code that gets the hook the night
// serves over loopback HTTP (hook/served): the first that honours
// onFailure "block" on an http hook. Older CLIs fail open when an http
// hook cannot be reached (RELIABILITY.md, "HTTP hooks"), so their
// sessions keep the command hook.
const ServedHookSince = "2.1.332"

// versionTimeout bounds `claude --version`.
const versionTimeout = 30 * time.Second

// hookSite is what the night reads to choose its sessions' hook
// transport: the agent's environment and where Claude Code's settings
// are.
type hookSite struct {
	env        []string
	managedDir string
	// cwds are the jobs' folders, whose project settings the CLI reads.
	cwds []string
}

// cliVersion is the agent's `--version`, parsed; "" when it cannot be
// read.
func cliVersion(ctx context.Context, agent string, env []string) (string, error) {
	res, err := proc.Run(ctx, proc.Spec{Argv: []string{agent, "--version"}, Env: env, Timeout: versionTimeout})
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", agent, err)
	}
	return clirange.Parse(string(res.Stdout)), nil
}

// servedHookVersion says why a CLI of version v cannot have the served
// hook ("" when it can).
func servedHookVersion(v string) string {
	switch {
	case v == "":
		return "the agent's version is unknown"
	case clirange.Compare(v, ServedHookSince) < 0:
		return fmt.Sprintf("Claude Code %s fails open when an http hook cannot be reached (onFailure \"block\" needs %s or later)", v, ServedHookSince)
	}
	return ""
}

// settingsFiles are the settings files whose allowedHttpHookUrls would
// apply to the sessions: the managed ones, the user's (CLAUDE_CONFIG_DIR
// or ~/.claude), and each job's project settings.
func (s hookSite) settingsFiles() []string {
	getenv := environ.Lookup(s.env)
	files := claudesettings.ManagedFiles(s.managedDir)
	if d, ok := getenv("CLAUDE_CONFIG_DIR"); ok && d != "" {
		files = append(files, filepath.Join(d, "settings.json"))
	} else if home, ok := getenv("HOME"); ok && home != "" {
		files = append(files, filepath.Join(home, ".claude", "settings.json"))
	}
	for _, cwd := range s.cwds {
		files = append(files, filepath.Join(cwd, ".claude", "settings.json"), filepath.Join(cwd, ".claude", "settings.local.json"))
	}
	return files
}

// urlRefused says why a settings file's allowedHttpHookUrls may refuse
// url ("" when no file sets it, or every file that does has a pattern that
// matches it). A file that cannot be read or parsed but names the key
// counts as refusing: the night cannot prove the contrary.
func (s hookSite) urlRefused(urls ...string) string {
	for _, path := range s.settingsFiles() {
		data, err := atomicfile.Read(path, 4<<20)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return fmt.Sprintf("%s cannot be read (%v), and may restrict http hooks", path, err)
		}
		if !strings.Contains(string(data), "allowedHttpHookUrls") {
			continue
		}
		var f struct {
			Allowed *[]string `json:"allowedHttpHookUrls"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			return fmt.Sprintf("%s names allowedHttpHookUrls but is not valid JSON (%v)", path, err)
		}
		if f.Allowed == nil {
			continue
		}
		for _, u := range urls {
			if !anyPatternMatches(*f.Allowed, u) {
				return fmt.Sprintf("%s sets allowedHttpHookUrls, and none of its patterns is sure to allow the night's loopback hook URL", path)
			}
		}
	}
	return ""
}

// anyPatternMatches: one of patterns, with * matching any run of
// characters (Claude Code's wildcard), matches url whole.
func anyPatternMatches(patterns []string, url string) bool {
	for _, p := range patterns {
		parts := strings.Split(p, "*")
		for i, part := range parts {
			parts[i] = regexp.QuoteMeta(part)
		}
		if re, err := regexp.Compile("^" + strings.Join(parts, ".*") + "$"); err == nil && re.MatchString(url) {
			return true
		}
	}
	return false
}

// startServedHook starts the hook the night serves when the batch and the
// agent allow it, and returns nil (having said why) when the sessions
// keep the command hook. The caller closes the server after the night.
func startServedHook(ctx context.Context, b *jobs.Batch, site hookSite, log func(key, line string), note func(msg string)) *served.Server {
	if b.HookTransport == jobs.HookCommand {
		return nil
	}
	fallback := func(why string) *served.Server {
		note("the sessions get the command hook, not the served http hook: " + why)
		return nil
	}
	v, err := cliVersion(ctx, b.Agent.Command, site.env)
	if err != nil {
		return fallback(err.Error())
	}
	if why := servedHookVersion(v); why != "" {
		return fallback(why)
	}
	srv, err := served.Start(log)
	if err != nil {
		return fallback(err.Error())
	}
	// Two keys of every shape a session's can take: a pattern must allow
	// any of them, not the one it was tried with.
	if why := site.urlRefused(srv.URL(strings.Repeat("0", 32)), srv.URL(strings.Repeat("f", 32))); why != "" {
		_ = srv.Close()
		return fallback(why)
	}
	note(fmt.Sprintf("the sessions' hook is served over loopback http by the night (Claude Code %s)", v))
	return srv
}
