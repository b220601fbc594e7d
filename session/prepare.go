package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/hook/served"
	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/hookexe"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/secrets"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// Prepare creates the attempt's folder and writes its MCP config (the
// job's servers only) and the settings file (registering nightwatch's
// hook). Both are checked, because Claude Code silently ignores a
// settings file that is not valid JSON and silently drops an MCP entry it
// cannot use: the settings as the bytes written, the MCP config read back
// from its file the way the hook reads it. The settings do not name the
// attempt (its hook finds the MCP config through the session's
// environment, commandEnviron), so the run's attempts share one file per
// content, written by the first (statedir.Settings).
func Prepare(spec Spec) (Files, error) {
	dir, err := Folder(spec)
	if err != nil {
		return Files{}, err
	}
	b, job := spec.Batch, spec.Job
	f := attemptFiles(spec, dir)
	env := Environ(b, spec.Env)
	mcpJSON, err := launchConfig(spec.Binary, b, job, env)
	if err != nil {
		return Files{}, fmt.Errorf("job %s: MCP config: %w", job.Name, err)
	}
	mcpConfigFile(spec, &f, mcpJSON)
	// The hook's MCP config (knobs.EnvMCPConfig) is a path list; a
	// separator inside the path would make it read two wrong files
	// instead of ours.
	if strings.ContainsRune(f.MCPConfig, os.PathListSeparator) {
		return Files{}, fmt.Errorf("session files: the path %s contains %q, which the hook would split its MCP config path at", f.MCPConfig, os.PathListSeparator)
	}
	if err := makeFolders(b.StateDir, dir); err != nil {
		return Files{}, err
	}
	// The attempt's MCP config is written before every attempt and read
	// only by it (removed at its end): atomic, not durable. The run's
	// (SharedMCPConfig) is written when it is not already there, like the
	// settings below.
	if !f.SharedMCPConfig || !atomicfile.Holds(f.MCPConfig, mcpJSON) {
		if err := atomicfile.WriteFileVolatile(f.MCPConfig, mcpJSON, atomicfile.Mode); err != nil {
			return Files{}, fmt.Errorf("job %s: %w", job.Name, err)
		}
	}
	if err := checkMCPConfig(f.MCPConfig, job.Servers); err != nil {
		return Files{}, fmt.Errorf("job %s: %w", job.Name, err)
	}
	// What the session's environment leaves out for the servers, its hook
	// and exec-servers still redact: they read it here (state_dir, which
	// the deny rules keep from the model), by the path in FileVariable.
	if left := leftOut(env, serverOnly(b, job, env)); len(left) > 0 {
		data, err := secrets.FileData(left)
		if err != nil {
			return Files{}, fmt.Errorf("job %s: encode the secrets file: %w", job.Name, err)
		}
		if err := atomicfile.WriteFileVolatile(filepath.Join(dir, statedir.AttemptSecrets), data, atomicfile.Mode); err != nil {
			return Files{}, fmt.Errorf("job %s: %w", job.Name, err)
		}
	}

	settings, hook, deny, err := settingsOf(spec, &f)
	if err != nil {
		return Files{}, fmt.Errorf("job %s: %w", job.Name, err)
	}
	if err := checkSettings(f.Settings, settings, hook, deny); err != nil {
		return Files{}, fmt.Errorf("job %s: %w", job.Name, err)
	}
	// Written once a night per content; again when the file there is
	// anything but these bytes, owner-only. Not durable: a crash that
	// loses it makes the next attempt find it different, and write it.
	if !atomicfile.Holds(f.Settings, settings) {
		if err := atomicfile.WriteFileVolatile(f.Settings, settings, atomicfile.Mode); err != nil {
			return Files{}, fmt.Errorf("job %s: %w", job.Name, err)
		}
	}
	return f, nil
}

// attemptFiles are the paths of the attempt whose folder is dir; the
// settings' path depends on their content (settingsOf).
func attemptFiles(spec Spec, dir string) Files {
	root := spec.Batch.StateDir
	return Files{
		Dir:       dir,
		MCPConfig: filepath.Join(dir, statedir.AttemptMCPConfig),
		Stream:    filepath.Join(dir, statedir.AttemptStream),
		Stderr:    filepath.Join(dir, statedir.AttemptStderr),
		Events:    statedir.Events(root),
		Cache:     statedir.Cache(root),
	}
}

// mcpConfigFile sets where the attempt's MCP config (data) goes: in its
// folder, removed when the session ends, as it holds the servers'
// resolved secrets; for a job without servers, whose config names none
// and holds nothing secret, the run's one file of that content
// (statedir.MCPConfig), shared by its attempts and kept.
func mcpConfigFile(spec Spec, f *Files, data []byte) {
	if len(spec.Job.Servers) > 0 {
		return
	}
	sum := sha256.Sum256(data)
	f.MCPConfig = statedir.MCPConfig(spec.Batch.StateDir, spec.RunID, hex.EncodeToString(sum[:8]))
	f.SharedMCPConfig = true
}

// settingsOf is the session's settings file's bytes, the hook in it and
// the deny rules; it sets f.Settings, the run's file of that content. A
// served hook's URL names the attempt, so its settings are the attempt's
// own.
func settingsOf(spec Spec, f *Files) (data []byte, hook hookHandler, deny []string, err error) {
	hook = hookHandler{Type: "command", Command: hookCommand(spec, *f)}
	if h := spec.HTTPHook; h != nil {
		// The night serves the hook (hook/served); the token is a secret,
		// and this owner-only file in state_dir, which the deny rules keep
		// from the model's file tools, is the only place it is written.
		hook = hookHandler{Type: "http", URL: h.URL, Headers: map[string]string{h.TokenHeader: h.Token}}
	}
	hook.Timeout = spec.Batch.HookTimeout(spec.Job)
	deny = denyRules(spec)
	data, err = json.MarshalIndent(newSettings(hook, deny), "", "  ")
	if err != nil {
		return nil, hookHandler{}, nil, fmt.Errorf("encode settings: %w", err)
	}
	data = append(data, '\n')
	sum := sha256.Sum256(data)
	f.Settings = statedir.Settings(spec.Batch.StateDir, spec.RunID, hex.EncodeToString(sum[:8]))
	return data, hook, deny, nil
}

// makeFolders makes dir, a folder below stateDir, one level at a time:
// every level that exists must be a folder, not a symlink or anything
// else (os.MkdirAll would follow a planted link, runs/<run>/<job>
// pointing elsewhere, and the files below would be written in its
// target), and each missing one is made in the folder checked before
// it. A level that exists costs one os.Lstat; stateDir itself is made
// (os.MkdirAll) only when its first level cannot be.
func makeFolders(stateDir, dir string) error {
	rel, err := filepath.Rel(stateDir, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("session files: %s is not below the state folder %s", dir, stateDir)
	}
	p := stateDir
	for i, name := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, name)
		fi, err := os.Lstat(p)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("session files: %s is a symlink or not a folder; refusing to write through it", p)
			}
			continue
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("session files: %w", err)
		}
		err = os.Mkdir(p, 0o700)
		if i == 0 && errors.Is(err, os.ErrNotExist) {
			if err = os.MkdirAll(stateDir, 0o700); err == nil {
				err = os.Mkdir(p, 0o700)
			}
		}
		if errors.Is(err, os.ErrExist) {
			// Made by someone else since the Lstat: checked as any
			// level that exists.
			if fi, lerr := os.Lstat(p); lerr != nil || !fi.IsDir() {
				return fmt.Errorf("session files: %s is a symlink or not a folder; refusing to write through it", p)
			}
			err = nil
		}
		if err != nil {
			return fmt.Errorf("session files: %w", err)
		}
	}
	return nil
}

// Folder is the attempt's folder, where Prepare writes its files, after
// the checks Prepare makes of the spec; nothing is created. A night
// journals the attempt's start (and its folder) while Prepare runs.
func Folder(spec Spec) (string, error) {
	if err := checkSpec(spec); err != nil {
		return "", err
	}
	return statedir.Attempt(spec.Batch.StateDir, spec.RunID, spec.Job.Name, spec.Attempt), nil
}

func checkSpec(spec Spec) error {
	switch {
	case spec.Batch == nil || spec.Job == nil:
		return errors.New("session: batch and job are required")
	case !filepath.IsAbs(spec.Batch.StateDir):
		return fmt.Errorf("session: state_dir %q is not absolute", spec.Batch.StateDir)
	case !filepath.IsAbs(spec.Binary):
		// The hook command runs in the job's cwd, through /bin/sh.
		return fmt.Errorf("session: nightwatch binary %q is not an absolute path", spec.Binary)
	case spec.Attempt < 1:
		return fmt.Errorf("session: attempt %d: attempts count from 1", spec.Attempt)
	case slices.Contains(spec.Batch.Agent.Args, "--bare"):
		// --bare skips every hook, --settings included (reference §1.7):
		// the night would run without nightwatch and nobody would notice.
		return errors.New("session: agent.args has --bare, which turns off nightwatch's hook")
	}
	for what, name := range map[string]string{"run id": spec.RunID, "job name": spec.Job.Name} {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
			return fmt.Errorf("session: %s %q cannot name a folder", what, name)
		}
	}
	return nil
}

// mcpConfig builds {"mcpServers": {…}} with the job's servers and no
// others.
func mcpConfig(b *jobs.Batch, job *jobs.Job, env []string) ([]byte, error) {
	servers := make(map[string]map[string]any, len(job.Servers))
	for _, name := range job.Servers {
		var srv *jobs.Server
		for _, s := range b.Servers {
			if s.Name == name {
				srv = s
				break
			}
		}
		if srv == nil {
			return nil, fmt.Errorf("server %q is not defined in the batch", name)
		}
		entry, err := serverEntry(b, srv, env)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		servers[name] = entry
	}
	data, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return append(data, '\n'), nil
}

// serverEntry is one mcpServers entry. It starts from the entry as
// the user wrote it (Raw keeps fields nightwatch does not model, such as
// timeout) and lays the resolved transport fields over it, so that no
// ${VAR} is left for Claude Code to expand in an environment that may
// differ from the supervisor's.
func serverEntry(b *jobs.Batch, srv *jobs.Server, env []string) (map[string]any, error) {
	// The user's fields stay raw JSON, so numbers and anything else pass
	// through byte for byte.
	var raw map[string]json.RawMessage
	if len(srv.MCP.Raw) > 0 {
		if err := json.Unmarshal(srv.MCP.Raw, &raw); err != nil {
			return nil, fmt.Errorf("the entry is not a JSON object: %w", err)
		}
	}
	entry := make(map[string]any, len(raw)+1)
	for k, v := range raw {
		entry[k] = v
	}
	m := srv.MCP
	setOrDrop := func(key string, v any, empty bool) {
		if empty {
			delete(entry, key)
		} else {
			entry[key] = v
		}
	}
	switch m.Transport {
	case mcpconfig.Stdio:
		command := m.Command
		// A relative path to a program ("./bin/server") would be looked up
		// from the job's cwd; the batch file meant its own folder.
		if strings.ContainsRune(command, filepath.Separator) && !filepath.IsAbs(command) {
			command = filepath.Join(b.Dir, command)
		}
		serverEnv := maps.Clone(m.Env)
		if serverEnv == nil {
			serverEnv = map[string]string{}
		}
		// launchd and cron give no login shell: each variable the server
		// requires travels in its own env, not only in Claude's.
		for _, k := range srv.RequiresEnv {
			if _, ok := serverEnv[k]; ok {
				continue
			}
			v, ok := lookup(env, k)
			if !ok || v == "" {
				return nil, fmt.Errorf("requires %s, which is not set", k)
			}
			serverEnv[k] = v
		}
		entry["command"] = command
		setOrDrop("args", m.Args, len(m.Args) == 0)
		setOrDrop("env", serverEnv, len(serverEnv) == 0)
	case mcpconfig.HTTP, mcpconfig.SSE, mcpconfig.WS:
		if _, ok := entry["type"]; !ok {
			entry["type"] = string(m.Transport) // a url without a type is dropped
		}
		entry["url"] = m.URL
		setOrDrop("headers", m.Headers, len(m.Headers) == 0)
	case "":
		if len(entry) == 0 {
			return nil, errors.New("neither a transport nor an entry to write")
		}
	default:
		return nil, fmt.Errorf("unknown transport %q", m.Transport)
	}
	// Under -p servers connect in the background, and a slow server's
	// tools are missing from the first turn unless the entry asks Claude
	// to wait for it. A user's explicit false is kept.
	if _, ok := entry["alwaysLoad"]; !ok {
		entry["alwaysLoad"] = true
	}
	return entry, nil
}

func lookup(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// checkMCPConfig reads the written file the way the hook does and
// checks that every server of the job survived: an entry Claude Code
// would drop must fail the attempt now, not show up as a missing tool.
func checkMCPConfig(path string, want []string) error {
	r := mcpconfig.Resolve(mcpconfig.Options{Explicit: []string{path}})
	var problems []string
	for _, p := range r.Problems {
		problems = append(problems, p.Message)
	}
	for _, name := range want {
		if why, dropped := r.Dropped[name]; dropped {
			problems = append(problems, fmt.Sprintf("server %q would be dropped by Claude Code: %s", name, why))
		} else if r.Servers[name] == nil {
			problems = append(problems, fmt.Sprintf("server %q is missing", name))
		}
	}
	if len(r.Servers) != len(want) {
		problems = append(problems, fmt.Sprintf("%d servers written for %d wanted", len(r.Servers), len(want)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("check %s: %s", path, strings.Join(problems, "; "))
	}
	return nil
}

// hookCommand is the hook's command line. Claude Code runs it with
// /bin/sh -c, so every value is shell-quoted: a state_dir like
// "~/My Nights/bob's" must not split or unbalance the line. The state
// machine's numbers are the batch's one mapping (jobs.Health.Settings), so
// the hooks decide as the night does.
func hookCommand(spec Spec, f Files) string {
	// The dedicated hook executable beside nightwatch when it is there and
	// of the same build; else `nightwatch hook` (the night said why once).
	args := append(slices.Clone(hookexe.Choose(context.Background(), spec.Binary).Argv), hookArgs(spec, f)...)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = text.ShellQuote(a)
	}
	return strings.Join(quoted, " ")
}

// hookArgs are the hook's flags: the command hook's command line, and the
// served hook's knobs (ServedSession), so that both decide alike.
func hookArgs(spec Spec, f Files) []string {
	h := spec.Batch.Health
	s := h.Settings()
	// No --config: the attempt's MCP config reaches the hook through the
	// session's environment (knobs.EnvMCPConfig, commandEnviron), so that
	// the settings do not change from one attempt to the next.
	args := []string{"--state", f.Cache, "--events", f.Events,
		"--ttl", s.TTL.String(), "--backoff", s.Backoff.String(), "--max-backoff", s.MaxBackoff.String(),
		"--failure-threshold", strconv.Itoa(s.FailureThreshold), "--max-hold", spec.Batch.HoldOf(spec.Job, nil).String()}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--probe-timeout", h.ProbeTimeout}, {"--reconnect-timeout", h.ReconnectTimeout}} {
		if d.v > 0 { // unset: the hook's default, not an invalid zero
			args = append(args, d.flag, d.v.String())
		}
	}
	if spec.Batch.FailOpen {
		args = append(args, "--fail-open")
	}
	return args
}

// ServedSession is what the night's served hook (hook/served) reads for
// the attempt: the environment the session's CLI gets and the knobs its
// command hook would get from hookArgs, laid over that environment as the
// hook executable lays its flags.
func ServedSession(spec Spec, f Files) (served.Session, error) {
	// What Claude Code adds to every hook's environment, the stable part
	// (RELIABILITY.md, what a hook inherits): a reconnect command or a
	// probed server that asks whether it runs inside a session is told so
	// as by the command hook.
	env := append(commandEnviron(spec, f), "CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=sdk-cli", "CLAUDE_PROJECT_DIR="+spec.Job.Cwd)
	getenv := knobs.Getenv(environ.Lookup(env))
	home, _ := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	k, err := served.Knobs(hookArgs(spec, f), getenv, home)
	if err != nil {
		return served.Session{}, err
	}
	// The session's own secrets are redacted from what its hook says and
	// writes here, as its hook process would remember them (the batch's
	// were remembered when the night loaded it).
	secrets.RememberEnviron(env)
	return served.Session{Environ: env, Getenv: getenv, Home: home, Knobs: k}, nil
}

// hookEvents are the events the hook is registered for.
var hookEvents = []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"}

type settings struct {
	// DisableAllHooks false overrides a user's "disableAllHooks": true:
	// --settings merges with the user's settings and takes precedence.
	DisableAllHooks bool                     `json:"disableAllHooks"`
	Hooks           map[string][]hookMatcher `json:"hooks"`
	// Permissions deny the model's file tools the night's secrets and
	// state (denyRules). Deny rules of every settings source add up, and
	// a deny wins over any allow, --allowedTools and bypassPermissions
	// included.
	Permissions *permissions `json:"permissions,omitempty"`
}

type permissions struct {
	Deny []string `json:"deny"`
}

type hookMatcher struct {
	Matcher string        `json:"matcher"`
	Hooks   []hookHandler `json:"hooks"`
}

type hookHandler struct {
	Type    string `json:"type"`
	Command string `json:"command,omitempty"`
	// URL and Headers are an http hook's (the night's served hook).
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Timeout int               `json:"timeout"`
	// OnFailure "block" makes Claude Code 2.1.332 deny the call when the
	// hook does not answer in time, instead of sending it unchecked to a
	// server the hook was holding it from (2.1.197 ignores the key).
	OnFailure string `json:"onFailure,omitempty"`
}

func newSettings(handler hookHandler, deny []string) settings {
	s := settings{Hooks: map[string][]hookMatcher{}}
	if len(deny) > 0 {
		s.Permissions = &permissions{Deny: deny}
	}
	for _, ev := range hookEvents {
		hh := handler
		if ev == "PreToolUse" {
			hh.OnFailure = "block"
		}
		s.Hooks[ev] = []hookMatcher{{Matcher: "mcp__.*", Hooks: []hookHandler{hh}}}
	}
	return s
}

// checkSettings decodes the settings file's bytes (data, what is written
// to path: atomicfile writes them whole or not at all) and checks the
// hook is registered for every event exactly as written (its command, or
// its URL and token), and every deny rule is there.
func checkSettings(path string, data []byte, want hookHandler, deny []string) error {
	var s settings
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("check %s: not valid JSON: %w", path, err)
	}
	if s.DisableAllHooks {
		return fmt.Errorf("check %s: disableAllHooks is true", path)
	}
	for _, ev := range hookEvents {
		m := s.Hooks[ev]
		if len(m) != 1 || len(m[0].Hooks) != 1 || !sameHook(m[0].Hooks[0], want) {
			return fmt.Errorf("check %s: the %s hook is not registered as written", path, ev)
		}
	}
	var got []string
	if s.Permissions != nil {
		got = s.Permissions.Deny
	}
	if !slices.Equal(got, deny) {
		return fmt.Errorf("check %s: the permission deny rules are not as written", path)
	}
	return nil
}

// sameHook: got is want, but for onFailure (newSettings sets it on
// PreToolUse only).
func sameHook(got, want hookHandler) bool {
	return got.Type == want.Type && got.Command == want.Command && got.URL == want.URL &&
		maps.Equal(got.Headers, want.Headers) && got.Timeout == want.Timeout
}

// ServedHook is a session's hook served by the night's (or a cluster
// worker's) hook/served server.
type ServedHook struct {
	srv *served.Server
	key string
}

// ServeHook gives spec the hook srv serves, as an http hook: a key is
// made for the session first (its settings name it); Bind serves the
// session under it once Prepare has written the attempt's files, before
// anything is spawned; Release drops it when the session has ended. With
// no server (nil) the session keeps the command hook, and the returned
// nil ServedHook does nothing.
func ServeHook(spec *Spec, srv *served.Server) (*ServedHook, error) {
	if srv == nil {
		return nil, nil
	}
	key, err := srv.Reserve()
	if err != nil {
		return nil, fmt.Errorf("the session's hook: %w", err)
	}
	spec.HTTPHook = &HTTPHook{URL: srv.URL(key), TokenHeader: served.TokenHeader, Token: srv.Token()}
	return &ServedHook{srv: srv, key: key}, nil
}

// Key is the session's key in the served hook's URL (and in what the
// served hook logs).
func (h *ServedHook) Key() string {
	if h == nil {
		return ""
	}
	return h.key
}

// Bind serves the session of spec, whose files Prepare wrote (f).
func (h *ServedHook) Bind(spec Spec, f Files) error {
	if h == nil {
		return nil
	}
	ss, err := ServedSession(spec, f)
	if err != nil {
		return fmt.Errorf("the session's hook: %w", err)
	}
	h.srv.Bind(h.key, ss)
	return nil
}

// Release stops serving the session: its hook's requests are refused.
func (h *ServedHook) Release() {
	if h != nil {
		h.srv.Unregister(h.key)
	}
}
