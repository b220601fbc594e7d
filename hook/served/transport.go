package served

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/claudesettings"
	"github.com/nightwatch-dev/nightwatch/internal/clirange"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// Since is the oldest Claude Code that gets the hook the night
// serves over loopback HTTP (hook/served): the first that honours
// onFailure "block" on an http hook. Older CLIs fail open when an http
// hook cannot be reached (RELIABILITY.md, "HTTP hooks"), so their
// sessions keep the command hook.
const Since = "2.1.332"

// versionTimeout bounds `claude --version`, which the real CLI answers in
// well under a second: an agent that takes longer (a wrapper that runs a
// session whatever its arguments) keeps the command hook, and the first
// session waits no longer than this for the choice.
const versionTimeout = 10 * time.Second

// Site is what the night reads to choose its sessions' hook
// transport: the agent's environment and where Claude Code's settings
// are.
type Site struct {
	Env        []string
	ManagedDir string
	// Cwds are the jobs' folders, whose project settings the CLI reads.
	Cwds []string
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

// versionWhy says why a CLI of version v cannot have the served
// hook ("" when it can).
func versionWhy(v string) string {
	switch {
	case v == "":
		return "the agent's version is unknown"
	case clirange.Compare(v, Since) < 0:
		return fmt.Sprintf("Claude Code %s fails open when an http hook cannot be reached (onFailure \"block\" needs %s or later)", v, Since)
	}
	return ""
}

// settingsFiles are the settings files whose allowedHttpHookUrls would
// apply to the sessions: the managed ones, the user's (CLAUDE_CONFIG_DIR
// or ~/.claude), and each job's project settings.
func (s Site) settingsFiles() []string {
	getenv := environ.Lookup(s.Env)
	files := claudesettings.ManagedFiles(s.ManagedDir)
	if d, ok := getenv("CLAUDE_CONFIG_DIR"); ok && d != "" {
		files = append(files, filepath.Join(d, "settings.json"))
	} else if home, ok := getenv("HOME"); ok && home != "" {
		files = append(files, filepath.Join(home, ".claude", "settings.json"))
	}
	for _, cwd := range s.Cwds {
		files = append(files, filepath.Join(cwd, ".claude", "settings.json"), filepath.Join(cwd, ".claude", "settings.local.json"))
	}
	return files
}

// urlRefused says why a settings file's allowedHttpHookUrls may refuse
// url ("" when no file sets it, or every file that does has a pattern that
// matches it). A file that cannot be read or parsed but names the key
// counts as refusing: the night cannot prove the contrary.
func (s Site) urlRefused(urls ...string) string {
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

// SiteOf is the site of batch b's sessions: env is the agent's
// environment; managedDir overrides where the managed settings are ("":
// the platform's folder).
func SiteOf(b *jobs.Batch, env []string, managedDir string) Site {
	site := Site{Env: env, ManagedDir: claudesettings.ManagedDir()}
	if managedDir != "" {
		site.ManagedDir = managedDir
	}
	for _, j := range b.Jobs {
		site.Cwds = append(site.Cwds, j.Cwd)
	}
	return site
}

// StartFor starts the hook a night or a cluster worker serves to the
// sessions of batch b when the batch and the agent allow it, and returns
// nil (having said why, fellBack true) when the sessions keep the command
// hook. The caller closes the server after its last session.
func StartFor(ctx context.Context, b *jobs.Batch, site Site, log func(key, line string), note func(msg string, fellBack bool)) *Server {
	if b.HookTransport == jobs.HookCommand {
		return nil
	}
	fallback := func(why string) *Server {
		note("the sessions get the command hook, not the served http hook: "+why, true)
		return nil
	}
	v, err := cliVersion(ctx, b.Agent.Command, site.Env)
	if err != nil {
		return fallback(err.Error())
	}
	if why := versionWhy(v); why != "" {
		return fallback(why)
	}
	srv, err := Start(log)
	if err != nil {
		return fallback(err.Error())
	}
	// Two keys of every shape a session's can take: a pattern must allow
	// any of them, not the one it was tried with.
	if why := site.urlRefused(srv.URL(strings.Repeat("0", 32)), srv.URL(strings.Repeat("f", 32))); why != "" {
		_ = srv.Close()
		return fallback(why)
	}
	note(fmt.Sprintf("the sessions' hook is served over loopback http (Claude Code %s)", v), false)
	return srv
}
