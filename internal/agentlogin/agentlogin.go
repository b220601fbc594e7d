// Package agentlogin checks that Claude Code can log in from a given
// environment (the night's, not the operator's shell), without spending a
// model turn: it asks the CLI itself (`claude auth status --json`, which
// needs no network) and judges where the login it found lives. doctor's
// agent-login check and the night's preflight both use it. Only variable
// names are ever shown, never values.
package agentlogin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// Names are the variables that log the CLI in by themselves.
var Names = []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"}

// TokenFix is how a night gets a login it can always read. It names the
// variables without "=": output is redacted, and "NAME=<the token>" of a
// sensitive name would print as "NAME=[REDACTED] token>".
const TokenFix = "run `claude setup-token` once (it prints a long-lived token for your subscription) and put\n" +
	"it in the batch's env_file as CLAUDE_CODE_OAUTH_TOKEN (chmod 600); or, with an API key, put\n" +
	"the key there as ANTHROPIC_API_KEY. launchd and cron start the night without your login shell, and\n" +
	"under launchd the macOS Keychain holding an interactive login is often locked or out of reach"

// Status is what `claude auth status --json` prints (both tested
// versions; 2.1.332 adds fields).
type Status struct {
	LoggedIn         bool   `json:"loggedIn"`
	AuthMethod       string `json:"authMethod"` // none, api_key, oauth_token, claude.ai, …
	APIProvider      string `json:"apiProvider"`
	APIKeySource     string `json:"apiKeySource"`
	SubscriptionType string `json:"subscriptionType"`
}

// Level is a verdict's weight.
type Level string

const (
	OK   Level = "ok"
	Warn Level = "warn"
	Fail Level = "fail"
)

// Verdict is the judged login: Detail says what was found, Fix what to do
// ("" when nothing).
type Verdict struct {
	Level  Level
	Detail string
	Fix    string
}

// DefaultTimeout bounds one run of the agent to ask it something: the
// first start of the CLI (a 200 MB executable) from a cold disk on a busy
// machine took more than 10 s in CI, while a hung agent must still be cut.
const DefaultTimeout = 30 * time.Second

// Query runs `bin auth status --json` with env (exactly; nothing of the
// caller's own environment) in dir for at most timeout (DefaultTimeout when
// not positive), in its own process group.
func Query(ctx context.Context, bin, dir string, env []string, timeout time.Duration) (Status, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	spec := proc.Spec{Argv: []string{bin, "auth", "status", "--json"}, Env: env, Timeout: timeout}
	if dir != "" {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			spec.Dir = dir
		}
	}
	res, werr := proc.Run(ctx, spec)
	var re *proc.RunError
	if werr != nil && !errors.As(werr, &re) {
		return Status{}, werr // it did not start
	}
	if re != nil && re.TimedOut {
		return Status{}, fmt.Errorf("no answer within %s", timeout)
	}
	var st Status
	// Not logged in exits 1 with the same JSON. A JSON line without
	// loggedIn is not the answer (an agent that does not know the
	// command): it says nothing of the login.
	var has struct {
		LoggedIn *bool `json:"loggedIn"`
	}
	out := bytes.TrimSpace(res.Stdout)
	err := json.Unmarshal(out, &st)
	if err == nil {
		err = json.Unmarshal(out, &has)
	}
	if err == nil && has.LoggedIn == nil {
		err = errors.New("no loggedIn field")
	}
	if err != nil {
		return Status{}, fmt.Errorf("%s, output not auth status JSON: %s", proc.ExitDescription(werr),
			text.OneLine(string(res.Stdout)+" "+string(res.Stderr), 200))
	}
	return st, nil
}

// Where locates an interactive login's files.
type Where struct {
	GOOS string // runtime.GOOS
	Home string
	// ConfigDir is CLAUDE_CONFIG_DIR in the night's environment ("" unset).
	ConfigDir string
	Now       time.Time
}

// Judge says whether st is a login a night can use; from names the
// environment it was read from, for the words.
func Judge(st Status, from string, w Where) Verdict {
	if !st.LoggedIn {
		return Verdict{Level: Fail, Fix: TokenFix,
			Detail: "Claude Code is not logged in from " + from + ": every session of the night would fail at once"}
	}
	switch st.AuthMethod {
	case "api_key":
		src := st.APIKeySource
		if src == "" {
			src = "an API key"
		}
		return Verdict{Level: OK, Detail: fmt.Sprintf("API key from %s, readable from %s (accepted or not shows at the first request)", src, from)}
	case "api_key_helper":
		return Verdict{Level: OK, Detail: "API key from apiKeyHelper in the settings, run by the night from " + from +
			" (it must work without your login shell or a Keychain prompt)"}
	case "oauth_token":
		return Verdict{Level: OK, Detail: "long-lived OAuth token (CLAUDE_CODE_OAUTH_TOKEN) from " + from}
	case "claude.ai":
		return stored(st, w)
	}
	return Verdict{Level: OK, Detail: fmt.Sprintf("logged in (%s, %s) from %s", st.AuthMethod, st.APIProvider, from)}
}

// stored judges an interactive subscriber login (`claude /login`): on
// Linux it is ~/.claude/.credentials.json (or under CLAUDE_CONFIG_DIR),
// which a night of the same user reads; on macOS it is in the login
// Keychain, which a launchd job often cannot unlock.
func stored(st Status, w Where) Verdict {
	plan := st.SubscriptionType
	if plan == "" {
		plan = "subscription"
	}
	if w.GOOS == "darwin" {
		return Verdict{Level: Warn, Fix: TokenFix,
			Detail: "interactive " + plan + " login kept in the macOS Keychain: under launchd the Keychain may be locked or unreachable and the session fails as \"Not logged in\""}
	}
	dir := filepath.Join(w.Home, ".claude")
	if w.ConfigDir != "" {
		dir = w.ConfigDir
	}
	file := filepath.Join(dir, ".credentials.json")
	detail := "interactive " + plan + " login in " + file
	var creds struct {
		OAuth *struct {
			ExpiresAt    int64  `json:"expiresAt"`
			RefreshToken string `json:"refreshToken"`
		} `json:"claudeAiOauth"`
	}
	now := w.Now
	if now.IsZero() {
		now = time.Now()
	}
	if b, err := atomicfile.Read(file, 1<<20); err == nil && json.Unmarshal(b, &creds) == nil && creds.OAuth != nil {
		if creds.OAuth.ExpiresAt > 0 && time.UnixMilli(creds.OAuth.ExpiresAt).Before(now) {
			if creds.OAuth.RefreshToken == "" {
				return Verdict{Level: Fail, Detail: detail + ": its access token expired and it has no refresh token", Fix: TokenFix}
			}
			detail += " (access token expired; the CLI renews it with the refresh token at the first request)"
		}
	}
	return Verdict{Level: OK, Detail: detail + "; a token from `claude setup-token` in the env_file does not depend on it"}
}

// ShellOnly names the login variables getenv (the operator's shell) has
// and env (the night's) lacks.
func ShellOnly(getenv func(string) (string, bool), env []string) string {
	var names []string
	for _, n := range Names {
		if v, ok := getenv(n); ok && v != "" && lookup(env, n) == "" {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

func lookup(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}
