package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

const loginTitle = "agent login"

// loginNames are the variables that log the CLI in by themselves.
var loginNames = []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"}

// tokenFix is how a night gets a login it can always read.
// It names the variables without "=": doctor's output is redacted, and
// "NAME=<the token>" of a sensitive name would print as "NAME=[REDACTED] token>".
const tokenFix = "run `claude setup-token` once (it prints a long-lived token for your subscription) and put\n" +
	"it in the batch's env_file as CLAUDE_CODE_OAUTH_TOKEN (chmod 600); or, with an API key, put\n" +
	"the key there as ANTHROPIC_API_KEY. launchd and cron start the night without your login shell, and\n" +
	"under launchd the macOS Keychain holding an interactive login is often locked or out of reach"

// authStatus is what `claude auth status --json` prints (both tested
// versions; 2.1.332 adds fields). It never spends a model turn and needs no
// network.
type authStatus struct {
	LoggedIn         bool   `json:"loggedIn"`
	AuthMethod       string `json:"authMethod"` // none, api_key, oauth_token, claude.ai, …
	APIProvider      string `json:"apiProvider"`
	APIKeySource     string `json:"apiKeySource"`
	SubscriptionType string `json:"subscriptionType"`
}

// login checks that the agent can log in from the night's environment:
// the launchd/cron base environment, the batch's env and env_file, and the
// EnvironmentVariables / Environment= of installed nightwatch launchd and
// systemd entries. It asks the CLI itself (`claude auth status`, run with
// exactly that environment) and explains where the login it found lives.
// Only variable names are ever shown, never values.
func (e *env) login(ctx context.Context) []Check {
	if e.agentBroken {
		return []Check{{ID: "agent-login", Title: loginTitle, Level: Warn,
			Detail: "not checked: Claude Code itself does not run (see the agent check)",
			Fix:    "repair the agent first, then run doctor again"}}
	}
	nightEnv, sources := e.nightLoginEnv()
	bin := e.ClaudeBin
	if bin == "" && e.batch != nil {
		bin = e.batch.Agent.Command
	}
	if bin == "" {
		bin = "claude"
	}
	path, err := lookPath(bin, e.Getenv)
	if err != nil {
		return []Check{{ID: "agent-login", Title: loginTitle, Level: Warn,
			Detail: fmt.Sprintf("cannot check the agent's login: %s not found", bin),
			Fix:    "install Claude Code (see the agent check), then run doctor again"}}
	}
	st, err := runAuthStatus(ctx, path, e.Cwd, nightEnv)
	if err != nil {
		return []Check{{ID: "agent-login", Title: loginTitle, Level: Warn,
			Detail: fmt.Sprintf("%s auth status (night's environment): %v", path, err),
			Fix:    "run `claude auth status` by hand; " + tokenFix}}
	}
	from := "the night's environment"
	if len(sources) > 0 {
		from += " (" + strings.Join(sources, ", ") + ")"
	}
	if !st.LoggedIn {
		detail := "Claude Code is not logged in from " + from + ": every session of the night would fail at once"
		if shell := e.shellOnlyLogin(nightEnv); shell != "" {
			detail += "; your shell has " + shell + " but the night does not"
		}
		return []Check{{ID: "agent-login", Title: loginTitle, Level: Fail, Detail: detail, Fix: tokenFix}}
	}
	switch st.AuthMethod {
	case "api_key":
		src := st.APIKeySource
		if src == "" {
			src = "an API key"
		}
		return []Check{ok("agent-login", loginTitle, fmt.Sprintf("API key from %s, readable from %s (accepted or not shows at the first request)", src, from))}
	case "api_key_helper":
		return []Check{ok("agent-login", loginTitle, "API key from apiKeyHelper in the settings, run by the night from "+from+
			" (it must work without your login shell or a Keychain prompt)")}
	case "oauth_token":
		return []Check{ok("agent-login", loginTitle, "long-lived OAuth token (CLAUDE_CODE_OAUTH_TOKEN) from "+from)}
	case "claude.ai":
		return []Check{e.storedLogin(st)}
	}
	return []Check{ok("agent-login", loginTitle, fmt.Sprintf("logged in (%s, %s) from %s", st.AuthMethod, st.APIProvider, from))}
}

// storedLogin judges an interactive subscriber login (`claude /login`):
// on Linux it is ~/.claude/.credentials.json (or under CLAUDE_CONFIG_DIR),
// which a night of the same user reads; on macOS it is in the login
// Keychain, which a launchd job often cannot unlock.
func (e *env) storedLogin(st authStatus) Check {
	plan := st.SubscriptionType
	if plan == "" {
		plan = "subscription"
	}
	if runtime.GOOS == "darwin" {
		return Check{ID: "agent-login", Title: loginTitle, Level: Warn,
			Detail: "interactive " + plan + " login kept in the macOS Keychain: under launchd the Keychain may be locked or unreachable and the session fails as \"Not logged in\"",
			Fix:    tokenFix}
	}
	dir := filepath.Join(e.Home, ".claude")
	if d, ok := e.Getenv("CLAUDE_CONFIG_DIR"); ok && d != "" {
		dir = d
	}
	file := filepath.Join(dir, ".credentials.json")
	detail := "interactive " + plan + " login in " + file
	var creds struct {
		OAuth *struct {
			ExpiresAt    int64  `json:"expiresAt"`
			RefreshToken string `json:"refreshToken"`
		} `json:"claudeAiOauth"`
	}
	if b, err := os.ReadFile(file); err == nil && json.Unmarshal(b, &creds) == nil && creds.OAuth != nil {
		if creds.OAuth.ExpiresAt > 0 && time.UnixMilli(creds.OAuth.ExpiresAt).Before(time.Now()) {
			if creds.OAuth.RefreshToken == "" {
				return Check{ID: "agent-login", Title: loginTitle, Level: Fail,
					Detail: detail + ": its access token expired and it has no refresh token", Fix: tokenFix}
			}
			detail += " (access token expired; the CLI renews it with the refresh token at the first request)"
		}
	}
	return Check{ID: "agent-login", Title: loginTitle, Level: OK,
		Detail: detail + "; a token from `claude setup-token` in the env_file does not depend on it"}
}

// nightLoginEnv is the environment a night starts claude with, and where its
// login variables came from (names only).
func (e *env) nightLoginEnv() ([]string, []string) {
	base := e.nightBase()
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	var sources []string
	add := func(src string, vars map[string]string) {
		for k, v := range vars {
			m[k] = v
			for _, n := range loginNames {
				if k == n && v != "" {
					sources = append(sources, k+" from "+src)
				}
			}
		}
	}
	if e.batch != nil {
		vars := e.batch.Env
		nightGetenv := func(name string) (string, bool) { v, ok := base[name]; return v, ok }
		if night, err := jobs.LoadWith(e.batch.File, nightGetenv, jobs.LoadOptions{AgentOptional: true}); err == nil {
			vars = night.Env
		}
		add("the batch's env/env_file", vars)
	}
	for _, ent := range e.installedEntries() {
		add(ent.name, ent.env)
	}
	// The CLI reads its login from HOME (or CLAUDE_CONFIG_DIR) and a
	// settings apiKeyHelper; both are the same for the night.
	if d, ok := e.Getenv("CLAUDE_CONFIG_DIR"); ok && m["CLAUDE_CONFIG_DIR"] == "" {
		m["CLAUDE_CONFIG_DIR"] = d
	}
	m["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
	sort.Strings(sources)
	return environ(m), sources
}

// shellOnlyLogin names the login variables the operator's shell has and the
// night lacks.
func (e *env) shellOnlyLogin(nightEnv []string) string {
	var names []string
	for _, n := range loginNames {
		if v, ok := e.Getenv(n); ok && v != "" && lookupEnv(nightEnv, n) == "" {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

func lookupEnv(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

type installedEntry struct {
	name string
	env  map[string]string
	// kind is the scheduler (launchd, systemd), path the entry's file.
	kind, path string
}

var (
	plistEnvRE  = regexp.MustCompile(`(?s)<key>EnvironmentVariables</key>\s*<dict>(.*?)</dict>`)
	plistPairRE = regexp.MustCompile(`(?s)<key>([^<]*)</key>\s*<string>([^<]*)</string>`)
)

// installedEntries reads the environment of nightwatch's launchd agents
// (dev.nightwatch.*.plist) and systemd user services (nightwatch-*.service)
// that run this batch (every one of them without a batch).
func (e *env) installedEntries() []installedEntry {
	var out []installedEntry
	batchFile := ""
	if e.batch != nil {
		batchFile = e.batch.File
	}
	plists, _ := filepath.Glob(filepath.Join(e.LaunchAgentsDir, "dev.nightwatch.*.plist"))
	for _, p := range plists {
		b, err := atomicfile.Read(p, maxUnitSize)
		if err != nil || (batchFile != "" && !bytes.Contains(b, []byte(html.EscapeString(batchFile)))) {
			continue
		}
		vars := map[string]string{}
		if m := plistEnvRE.FindSubmatch(b); m != nil {
			for _, kv := range plistPairRE.FindAllSubmatch(m[1], -1) {
				vars[html.UnescapeString(string(kv[1]))] = html.UnescapeString(string(kv[2]))
			}
		}
		out = append(out, installedEntry{name: "launchd " + filepath.Base(p), env: vars, kind: "launchd", path: p})
	}
	units, _ := filepath.Glob(filepath.Join(e.SystemdUserDir, "nightwatch-*.service"))
	for _, p := range units {
		b, err := atomicfile.Read(p, maxUnitSize)
		if err != nil || (batchFile != "" && !bytes.Contains(b, []byte(batchFile))) {
			continue
		}
		vars := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			v, ok := strings.CutPrefix(strings.TrimSpace(line), "Environment=")
			if !ok {
				continue
			}
			v = strings.Trim(v, `"`)
			v = strings.ReplaceAll(v, "%%", "%")
			if k, val, ok := strings.Cut(v, "="); ok {
				vars[k] = val
			}
		}
		out = append(out, installedEntry{name: "systemd " + filepath.Base(p), env: vars, kind: "systemd", path: p})
	}
	return out
}

// runAuthStatus runs `claude auth status --json` with env for at most 10 s
// in its own process group.
func runAuthStatus(ctx context.Context, bin, dir string, env []string) (authStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "auth", "status", "--json")
	cmd.Env = env
	if dir != "" {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			cmd.Dir = dir
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	proc.Prepare(cmd, 500*time.Millisecond)
	if err := proc.Start(cmd); err != nil {
		return authStatus{}, err
	}
	werr := proc.Wait(cmd)
	if ctx.Err() != nil {
		return authStatus{}, fmt.Errorf("no answer within 10s")
	}
	var st authStatus
	// Not logged in exits 1 with the same JSON.
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &st); err != nil {
		return authStatus{}, fmt.Errorf("%s, output not auth status JSON: %.200s", proc.ExitDescription(werr), oneLine(stdout.String()+" "+stderr.String()))
	}
	return st, nil
}
