package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// sessionGrace is how long a session gets between SIGTERM to its process
// group and SIGKILL. Claude Code uses it to close its MCP servers.
const sessionGrace = 5 * time.Second

// hookTimeoutSeconds bounds one run of nightwatch's hook inside Claude
// Code. A probe is bounded by --probe-timeout well below it.
const hookTimeoutSeconds = 60

// promptArgMax is the longest prompt passed as an argument. Linux refuses
// any single argument over 128 KiB (MAX_ARG_STRLEN) with E2BIG; longer
// prompts go through stdin, which `claude -p` reads when no prompt
// argument is given.
const promptArgMax = 100 << 10

// SessionSpec is everything one attempt of one job needs.
type SessionSpec struct {
	Batch   *jobs.Batch
	Job     *jobs.Job
	RunID   string
	Attempt int    // 1-based
	Binary  string // absolute path of the nightwatch binary whose hook is injected
	Env     []string
}

// SessionFiles are the paths of one attempt. Dir, Settings, MCPConfig,
// Stream and Stderr belong to the attempt; Cache and Events are shared by
// every session of the batch (the hook writes them).
type SessionFiles struct{ Dir, Settings, MCPConfig, Stream, Stderr, Events, Cache string }

// Observer hears what a running session's stream says, as it says it.
// Calls come from one goroutine of RunSession, one at a time, and never
// after RunSession returned. A slow observer slows the reading of the
// stream, so it should not block for long.
type Observer interface {
	// ServerStatus is called for each server in the init event
	// (connected, failed, needs-auth, pending).
	ServerStatus(server, status string)
	// ToolUnavailable is called when a tool result says a tool does not
	// exist ("No such tool available: mcp__x__y").
	ToolUnavailable(tool string)
}

// ProcessObserver is an Observer that also wants the session's process
// group id as soon as the session started, e.g. to journal it so that a
// supervisor restarted after a crash can kill what the dead one left.
type ProcessObserver interface {
	SessionStarted(pgid int)
}

// Outcome is how one attempt of a job ended.
type Outcome struct {
	Status   string `json:"status"`           // "done" or "failed"
	Reason   string `json:"reason,omitempty"` // why failed, one line
	ExitCode int    `json:"exit_code"`        // -1: killed by a signal or never started
	// KilledBy is who ended the session early: "timeout", "stall",
	// "stopped" (ctx cancelled by the supervisor), or "" if nobody did.
	KilledBy string `json:"killed_by,omitempty"`

	// From the result event.
	Subtype        string  `json:"subtype,omitempty"`
	IsError        bool    `json:"is_error,omitempty"`
	NumTurns       int     `json:"num_turns,omitempty"`
	CostUSD        float64 `json:"cost_usd,omitempty"`
	DurationMS     int64   `json:"duration_ms,omitempty"`
	SessionID      string  `json:"session_id,omitempty"` // from the result, else from init
	TerminalReason string  `json:"terminal_reason,omitempty"`

	ServersFailed    []string `json:"servers_failed,omitempty"` // failed / needs-auth in init
	ToolsUnavailable []string `json:"tools_unavailable,omitempty"`

	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
}

// sessionEnv is the environment of a session (and so of its hook and its
// stdio servers): base (the supervisor's own), then the batch's env_file
// and env, minus the fail-open variables unless the batch asks for fail
// open (a debugging switch left in a shell profile must not let a night
// call dead servers), plus MCP_CONNECTION_NONBLOCKING=0 unless set, so the
// first turn waits for the servers instead of starting without their
// tools (reference §2.4).
func sessionEnv(b *jobs.Batch, base []string) []string {
	var keys []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			set(k, v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b.Env)) {
		set(k, b.Env[k])
	}
	if !b.FailOpen {
		for _, k := range knobs.EnvFailOpen {
			delete(vals, k)
		}
	}
	if _, ok := vals["MCP_CONNECTION_NONBLOCKING"]; !ok {
		set("MCP_CONNECTION_NONBLOCKING", "0")
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if v, ok := vals[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// PrepareSession creates the attempt's folder and writes its settings file
// (registering nightwatch's hook) and its MCP config (the job's servers
// only). Both files are read back and checked, because Claude Code
// silently ignores a settings file that is not valid JSON and silently
// drops an MCP entry it cannot use.
func PrepareSession(spec SessionSpec) (SessionFiles, error) {
	if err := checkSessionSpec(spec); err != nil {
		return SessionFiles{}, err
	}
	b, job := spec.Batch, spec.Job
	dir := filepath.Join(b.StateDir, "runs", spec.RunID, job.Name, fmt.Sprintf("attempt-%d", spec.Attempt))
	f := SessionFiles{
		Dir:       dir,
		Settings:  filepath.Join(dir, "settings.json"),
		MCPConfig: filepath.Join(dir, "mcp.json"),
		Stream:    filepath.Join(dir, "stream.jsonl"),
		Stderr:    filepath.Join(dir, "stderr.log"),
		Events:    statedir.Events(b.StateDir),
		Cache:     statedir.Cache(b.StateDir),
	}
	// The hook's --config takes a path list; a separator inside the path
	// would make it read two wrong files instead of ours.
	if strings.ContainsRune(f.MCPConfig, os.PathListSeparator) {
		return SessionFiles{}, fmt.Errorf("session files: the path %s contains %q, which the hook's --config would split at", f.MCPConfig, os.PathListSeparator)
	}
	// MkdirAll follows a planted symlink (runs/<run>/<job> pointing
	// elsewhere) and the files below would be written in its target: every
	// folder under state_dir must be nightwatch's own, checked before and
	// after it is created.
	if err := sessionCheckFolders(b.StateDir, dir); err != nil {
		return SessionFiles{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return SessionFiles{}, fmt.Errorf("session files: %w", err)
	}
	if err := sessionCheckFolders(b.StateDir, dir); err != nil {
		return SessionFiles{}, err
	}

	env := sessionEnv(b, spec.Env)
	mcpJSON, err := sessionMCPConfig(b, job, env)
	if err != nil {
		return SessionFiles{}, fmt.Errorf("job %s: MCP config: %w", job.Name, err)
	}
	if err := atomicfile.WriteFile(f.MCPConfig, mcpJSON, atomicfile.Mode); err != nil {
		return SessionFiles{}, fmt.Errorf("job %s: %w", job.Name, err)
	}
	if err := checkSessionMCPConfig(f.MCPConfig, job.Servers); err != nil {
		return SessionFiles{}, fmt.Errorf("job %s: %w", job.Name, err)
	}

	command := sessionHookCommand(spec, f)
	settings, err := json.MarshalIndent(newSessionSettings(command), "", "  ")
	if err != nil {
		return SessionFiles{}, fmt.Errorf("job %s: encode settings: %w", job.Name, err)
	}
	if err := atomicfile.WriteFile(f.Settings, append(settings, '\n'), atomicfile.Mode); err != nil {
		return SessionFiles{}, fmt.Errorf("job %s: %w", job.Name, err)
	}
	if err := checkSessionSettings(f.Settings, command); err != nil {
		return SessionFiles{}, fmt.Errorf("job %s: %w", job.Name, err)
	}
	return f, nil
}

// sessionCheckFolders refuses a symlink or a non-folder at any existing
// level of dir below stateDir.
func sessionCheckFolders(stateDir, dir string) error {
	for p := dir; p != stateDir && p != filepath.Dir(p); p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("session files: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("session files: %s is a symlink or not a folder; refusing to write through it", p)
		}
	}
	return nil
}

func checkSessionSpec(spec SessionSpec) error {
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

// sessionMCPConfig builds {"mcpServers": {…}} with the job's servers and no
// others.
func sessionMCPConfig(b *jobs.Batch, job *jobs.Job, env []string) ([]byte, error) {
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
		entry, err := sessionServerEntry(b, srv, env)
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

// sessionServerEntry is one mcpServers entry. It starts from the entry as
// the user wrote it (Raw keeps fields nightwatch does not model, such as
// timeout) and lays the resolved transport fields over it, so that no
// ${VAR} is left for Claude Code to expand in an environment that may
// differ from the supervisor's.
func sessionServerEntry(b *jobs.Batch, srv *jobs.Server, env []string) (map[string]any, error) {
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
			v, ok := sessionLookup(env, k)
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

func sessionLookup(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// checkSessionMCPConfig reads the written file the way the hook does and
// checks that every server of the job survived: an entry Claude Code
// would drop must fail the attempt now, not show up as a missing tool.
func checkSessionMCPConfig(path string, want []string) error {
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

// sessionHookCommand is the hook's command line. Claude Code runs it with
// /bin/sh -c, so every value is shell-quoted: a state_dir like
// "~/My Nights/bob's" must not split or unbalance the line.
func sessionHookCommand(spec SessionSpec, f SessionFiles) string {
	h := spec.Batch.Health
	args := []string{spec.Binary, "hook", "--state", f.Cache, "--config", f.MCPConfig, "--events", f.Events}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--ttl", h.TTL}, {"--backoff", h.Backoff}, {"--max-backoff", h.MaxBackoff}, {"--probe-timeout", h.ProbeTimeout}} {
		if d.v > 0 { // unset: the hook's default, not an invalid zero
			args = append(args, d.flag, d.v.String())
		}
	}
	if spec.Batch.FailOpen {
		args = append(args, "--fail-open")
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = sessionShellQuote(a)
	}
	return strings.Join(quoted, " ")
}

// sessionShellQuote quotes s for /bin/sh: inside single quotes nothing is
// special except the quote itself, which is closed, escaped and reopened.
func sessionShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sessionHookEvents are the events the hook is registered for.
var sessionHookEvents = []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"}

type sessionSettings struct {
	// DisableAllHooks false overrides a user's "disableAllHooks": true:
	// --settings merges with the user's settings and takes precedence.
	DisableAllHooks bool                            `json:"disableAllHooks"`
	Hooks           map[string][]sessionHookMatcher `json:"hooks"`
}

type sessionHookMatcher struct {
	Matcher string               `json:"matcher"`
	Hooks   []sessionHookHandler `json:"hooks"`
}

type sessionHookHandler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
}

func newSessionSettings(command string) sessionSettings {
	s := sessionSettings{Hooks: map[string][]sessionHookMatcher{}}
	for _, ev := range sessionHookEvents {
		s.Hooks[ev] = []sessionHookMatcher{{Matcher: "mcp__.*",
			Hooks: []sessionHookHandler{{Type: "command", Command: command, Timeout: hookTimeoutSeconds}}}}
	}
	return s
}

// checkSessionSettings reads the settings file back and checks the hook is
// registered for every event with the exact command.
func checkSessionSettings(path, command string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("check settings: %w", err)
	}
	var s sessionSettings
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("check %s: not valid JSON: %w", path, err)
	}
	if s.DisableAllHooks {
		return fmt.Errorf("check %s: disableAllHooks is true", path)
	}
	for _, ev := range sessionHookEvents {
		m := s.Hooks[ev]
		if len(m) != 1 || len(m[0].Hooks) != 1 || m[0].Hooks[0].Command != command {
			return fmt.Errorf("check %s: the %s hook is not registered as written", path, ev)
		}
	}
	return nil
}

// SessionCommand is the `claude -p` command of one attempt, not started:
//
//	<agent.command> -p <prompt> --settings <f> --mcp-config <f> --strict-mcp-config
//	  --output-format stream-json --verbose <agent.args…> [--allowedTools <t>…]
//
// --allowedTools comes last because it is variadic: anything after it
// that is not a flag would be read as one more tool. A prompt that starts
// with '-' (it would be read as a flag) or is too long for one argument is
// given on stdin instead. The command runs in the job's cwd, in its own
// process group (proc.Prepare): cancelling ctx stops the whole group.
func SessionCommand(ctx context.Context, spec SessionSpec, f SessionFiles) *exec.Cmd {
	b, job := spec.Batch, spec.Job
	args := []string{"-p"}
	viaStdin := strings.HasPrefix(job.Prompt, "-") || len(job.Prompt) > promptArgMax
	if !viaStdin {
		args = append(args, job.Prompt)
	}
	args = append(args, "--settings", f.Settings, "--mcp-config", f.MCPConfig, "--strict-mcp-config",
		"--output-format", "stream-json", "--verbose")
	args = append(args, b.Agent.Args...)
	if len(job.AllowedTools) > 0 {
		args = append(args, "--allowedTools")
		args = append(args, job.AllowedTools...)
	}
	cmd := exec.CommandContext(ctx, b.Agent.Command, args...)
	cmd.Dir = job.Cwd
	cmd.Env = sessionEnv(b, spec.Env)
	if viaStdin {
		cmd.Stdin = strings.NewReader(job.Prompt)
	}
	// Otherwise stdin stays /dev/null: `claude -p` appends piped stdin to
	// the prompt, and the supervisor's stdin is nobody's input.
	proc.Prepare(cmd, sessionGrace)
	return cmd
}

var (
	errSessionTimeout = errors.New("session timeout")
	errSessionStall   = errors.New("session stalled")
)

// RunSession runs one attempt to its end and judges it. The stream is
// copied to f.Stream as it arrives and read line by line; stderr goes to
// f.Stderr. Job.Timeout (wall clock) and Job.StallTimeout (no stream
// output for that long; zero means no limit) end the session; so does
// cancelling ctx. Ending a
// session means SIGTERM, then SIGKILL after a grace period, to its whole
// process group, so the MCP servers Claude Code started die with it.
func RunSession(ctx context.Context, spec SessionSpec, f SessionFiles, obs Observer) Outcome {
	if obs == nil {
		obs = sessionNoObserver{}
	}
	out := Outcome{Status: "failed", ExitCode: -1, Started: time.Now()}
	runSession(ctx, spec, f, obs, &out)
	out.Ended = time.Now()
	// The MCP config holds the servers' resolved secrets (API keys in env,
	// bearer tokens in headers); only the session and its hook need it.
	_ = os.Remove(f.MCPConfig)
	return out
}

func runSession(ctx context.Context, spec SessionSpec, f SessionFiles, obs Observer, out *Outcome) {
	fail := func(format string, a ...any) { out.Reason = fmt.Sprintf(format, a...) }
	if spec.Batch == nil || spec.Job == nil {
		fail("session: batch and job are required")
		return
	}
	stream, err := openSessionLog(f.Stream)
	if err != nil {
		fail("cannot open the stream log: %v", err)
		return
	}
	defer stream.Close()
	stderr, err := openSessionLog(f.Stderr)
	if err != nil {
		fail("cannot open the stderr log: %v", err)
		return
	}
	defer stderr.Close()

	// Who stops the session is told by the context's cause: the parent's
	// cancellation (stopped), the wall-clock timer or the stall watchdog.
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cmdCtx := runCtx
	if t := spec.Job.Timeout; t > 0 {
		var cancel context.CancelFunc
		cmdCtx, cancel = context.WithTimeoutCause(runCtx, t, errSessionTimeout)
		defer cancel()
	}
	cmd := SessionCommand(cmdCtx, spec, f)
	// The kill is judged by whether the group was actually signalled, not
	// by the context alone: a timer that fires just after Claude exited
	// on its own did not kill anything.
	var killed atomic.Bool
	groupStop := cmd.Cancel
	cmd.Cancel = func() error {
		killed.Store(true)
		return groupStop()
	}

	// exec copies the child's stdout into the pipe; the reader below
	// drains it. Through a pipe (not an *os.File), exec's WaitDelay also
	// bounds a grandchild that keeps stdout open after Claude exited.
	pr, pw := io.Pipe()
	var lastOutput atomic.Int64
	lastOutput.Store(time.Now().UnixNano())
	cmd.Stdout = pw
	cmd.Stderr = stderr

	if err := cmd.Start(); err != nil {
		pw.Close()
		if ctx.Err() != nil { // stopped before it could start
			out.KilledBy = "stopped"
			fail("stopped by the supervisor before the session started")
			return
		}
		fail("cannot start %s: %v", spec.Batch.Agent.Command, err)
		return
	}

	if po, ok := obs.(ProcessObserver); ok {
		po.SessionStarted(cmd.Process.Pid) // the leader's pid is the group's id
	}
	st := &sessionStreamState{obs: obs}
	readDone := make(chan error, 1)
	go func() {
		err := ReadStreamLines(sessionActivityReader{pr, &lastOutput}, stream, st.line)
		_, _ = io.Copy(io.Discard, pr) // never leave exec's copier blocked
		readDone <- err
	}()
	watchDone := make(chan struct{})
	if stall := spec.Job.StallTimeout; stall > 0 {
		go sessionWatchStall(runCtx, watchDone, stall, &lastOutput, func() { stop(errSessionStall) })
	}

	waitErr := proc.Wait(cmd)
	close(watchDone)
	pw.Close()
	copyErr := <-readDone
	_ = stream.Sync()

	if cmd.ProcessState != nil {
		out.ExitCode = cmd.ProcessState.ExitCode()
	}
	if killed.Load() {
		switch cause := context.Cause(cmdCtx); {
		case errors.Is(cause, errSessionTimeout):
			out.KilledBy = "timeout"
		case errors.Is(cause, errSessionStall):
			out.KilledBy = "stall"
		default:
			out.KilledBy = "stopped"
		}
	}
	st.fill(out)
	judgeSession(out, st.result, spec.Job, waitErr, sessionLastLine(f.Stderr))
	if copyErr != nil && out.Status != "done" {
		out.Reason += " (" + copyErr.Error() + ")"
	}
}

// openSessionLog opens an attempt's log for appending. O_NOFOLLOW refuses
// a planted symlink, as atomicfile does for the other state files.
func openSessionLog(path string) (*os.File, error) {
	if path == "" {
		return nil, errors.New("no path")
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, atomicfile.Mode)
}

// sessionWatchStall ends the session when no stream output arrived for stall. It
// sleeps until the earliest moment a stall is possible, not on a fixed tick.
func sessionWatchStall(ctx context.Context, done <-chan struct{}, stall time.Duration, last *atomic.Int64, kill func()) {
	t := time.NewTimer(stall)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-t.C:
			idle := time.Since(time.Unix(0, last.Load()))
			if idle >= stall {
				kill()
				return
			}
			t.Reset(stall - idle)
		}
	}
}

// sessionActivityReader records when output last arrived, partial lines included.
type sessionActivityReader struct {
	r    io.Reader
	last *atomic.Int64
}

func (a sessionActivityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.last.Store(time.Now().UnixNano())
	}
	return n, err
}

type sessionNoObserver struct{}

func (sessionNoObserver) ServerStatus(string, string) {}
func (sessionNoObserver) ToolUnavailable(string)      {}

// sessionStreamState is what the stream said so far.
type sessionStreamState struct {
	obs           Observer
	sessionID     string
	result        *StreamResult
	serversFailed []string
	tools         []string
}

func (s *sessionStreamState) line(b []byte) {
	l := ParseStreamLine(b)
	if l.Init {
		if l.SessionID != "" {
			s.sessionID = l.SessionID
		}
		for _, srv := range l.Servers {
			s.obs.ServerStatus(srv.Name, srv.Status)
			if (srv.Status == "failed" || srv.Status == "needs-auth") && !slices.Contains(s.serversFailed, srv.Name) {
				s.serversFailed = append(s.serversFailed, srv.Name)
			}
		}
	}
	for _, tool := range l.ToolsUnavailable {
		s.obs.ToolUnavailable(tool)
		if !slices.Contains(s.tools, tool) {
			s.tools = append(s.tools, tool)
		}
	}
	if l.Result != nil {
		s.result = l.Result // the last one counts
	}
}

func (s *sessionStreamState) fill(out *Outcome) {
	out.SessionID = s.sessionID
	out.ServersFailed = s.serversFailed
	out.ToolsUnavailable = s.tools
	if r := s.result; r != nil {
		out.Subtype, out.IsError, out.NumTurns = r.Subtype, r.IsError, r.NumTurns
		out.CostUSD, out.DurationMS, out.TerminalReason = r.TotalCostUSD, r.DurationMS, r.TerminalReason
		if r.SessionID != "" {
			out.SessionID = r.SessionID
		}
	}
}

// judgeSession decides done or failed. The exit code alone is not enough
// (SIGINT exits 0 with error_during_execution; an API error is a
// "success" subtype with is_error), and neither is the result: after
// SIGTERM Claude Code still prints a success result, and a session
// nightwatch stopped is never done.
func judgeSession(out *Outcome, r *StreamResult, job *jobs.Job, waitErr error, stderrLine string) {
	exit := fmt.Sprintf("exit %d", out.ExitCode)
	if out.ExitCode < 0 {
		exit = proc.ExitDescription(waitErr)
	}
	withStderr := func(s string) string {
		if stderrLine != "" {
			s += ": " + stderrLine
		}
		return s
	}
	var reason string
	switch {
	case out.KilledBy == "timeout":
		reason = fmt.Sprintf("killed after %s timeout", sessionShortDuration(job.Timeout))
	case out.KilledBy == "stall":
		reason = fmt.Sprintf("no output for %s (stall)", sessionShortDuration(job.StallTimeout))
	case out.KilledBy != "":
		reason = "stopped by the supervisor"
	case r == nil:
		reason = withStderr(exit + ": no result event")
	case r.IsError && r.APIErrorStatus != 0:
		reason = fmt.Sprintf("api error %d: %s", r.APIErrorStatus, r.Result)
	case r.Subtype != "success":
		reason = exit + ": " + r.Subtype
		if len(r.Errors) > 0 {
			reason += ": " + r.Errors[0]
		} else if r.TerminalReason != "" {
			reason += " (" + r.TerminalReason + ")"
		}
	case r.IsError:
		reason = exit + ": the result is an error: " + r.Result
	case out.ExitCode != 0:
		reason = withStderr(exit + " after a success result")
	}
	if reason == "" {
		out.Status, out.Reason = "done", ""
		return
	}
	out.Status, out.Reason = "failed", sessionOneLine(reason, 300)
}

// sessionShortDuration prints 45m rather than 45m0s.
func sessionShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func sessionOneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// sessionLastLine is the last non-empty line of the file's last 4 KiB: the CLI's
// own error ("Error: Invalid MCP configuration: …") when it exits early.
func sessionLastLine(path string) string {
	fh, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer fh.Close()
	const tail = 4 << 10
	if fi, err := fh.Stat(); err == nil && fi.Size() > tail {
		_, _ = fh.Seek(-tail, io.SeekEnd)
	}
	data, _ := io.ReadAll(io.LimitReader(fh, tail))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return sessionOneLine(lines[len(lines)-1], 200)
}
