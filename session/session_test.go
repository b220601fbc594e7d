package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// sessionTestBatch is a loaded batch as the jobs loader would return it:
// absolute paths, defaults applied. stateDir gets a space and a quote in
// its name, so every test also proves the quoting of the hook command.
func sessionTestBatch(t *testing.T, servers ...*jobs.Server) *jobs.Batch {
	t.Helper()
	root := t.TempDir()
	return &jobs.Batch{
		File:        filepath.Join(root, "batch.yaml"),
		Dir:         root,
		Version:     1,
		Name:        "nightly",
		MaxParallel: 1,
		StateDir:    filepath.Join(root, "night's state dir"),
		Env:         map[string]string{},
		Agent:       jobs.Agent{Command: "/bin/false"},
		Health: jobs.Health{TTL: 2 * time.Minute, Backoff: 2 * time.Second, MaxBackoff: time.Minute,
			ProbeTimeout: 5 * time.Second, MaxHold: 40 * time.Second},
		Servers: servers,
	}
}

func sessionTestJob(name, prompt string, servers ...string) *jobs.Job {
	return &jobs.Job{Name: name, Prompt: prompt, Servers: servers, Cwd: os.TempDir(),
		Timeout: 2 * time.Minute, StallTimeout: time.Minute, OnUnhealthy: jobs.Defer}
}

func sessionTestSpec(b *jobs.Batch, job *jobs.Job, env ...string) Spec {
	b.Jobs = append(b.Jobs, job)
	return Spec{Batch: b, Job: job, RunID: "20260101T020000Z", Attempt: 1,
		Binary: "/opt/night watch/it's/nightwatch", Env: env}
}

func sessionTestStdio(name, command string, args ...string) *jobs.Server {
	return &jobs.Server{Name: name, MCP: mcpconfig.Server{Name: name, Transport: mcpconfig.Stdio,
		Command: command, Args: args}}
}

// sessionTestSplit runs command through /bin/sh the way Claude Code runs a
// hook, with the program replaced by one that prints its argv.
func sessionTestSplit(t *testing.T, command string) []string {
	t.Helper()
	out, err := exec.Command("/bin/sh", "-c", `args() { printf '%s\n' "$@"; }; args `+command).Output()
	if err != nil {
		t.Fatalf("sh -c %s: %v", command, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

func sessionTestReadJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s is not valid JSON: %v\n%s", path, err, data)
	}
}

func TestPrepareSessionWritesCheckedFiles(t *testing.T) {
	notes := sessionTestStdio("notes", "/usr/local/bin/notes-mcp", "--db", "/var/notes.db")
	notes.RequiresEnv = []string{"NOTES_API_KEY"}
	// Raw as written by the user: a variable the loader resolved into MCP,
	// a field nightwatch does not model, and nightwatch's fields gone.
	notes.MCP.Raw = json.RawMessage(`{"command": "${NOTES_BIN}", "args": ["--db", "${DB}"], "timeout": 1500}`)
	notes.MCP.Env = map[string]string{"LOG_LEVEL": "debug"}
	search := &jobs.Server{Name: "search", MCP: mcpconfig.Server{Name: "search", Transport: mcpconfig.HTTP,
		URL: "https://search.example/mcp", Headers: map[string]string{"Authorization": "Bearer tok"},
		Raw: json.RawMessage(`{"type": "http", "url": "https://search.example/mcp", "alwaysLoad": false}`)}}
	other := sessionTestStdio("other", "/bin/other")
	b := sessionTestBatch(t, notes, search, other)
	b.Env["NOTES_API_KEY"] = "from-env-file"
	spec := sessionTestSpec(b, sessionTestJob("summarize-inbox", "hello", "notes", "search"),
		"PATH=/usr/bin:/bin", "NIGHTWATCH_FAIL_OPEN=1")

	f, err := Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	wantDir := filepath.Join(b.StateDir, "runs", spec.RunID, "summarize-inbox", "attempt-1")
	if f.Dir != wantDir || f.Cache != filepath.Join(b.StateDir, "cache.json") ||
		f.Events != filepath.Join(b.StateDir, "events.jsonl") || filepath.Dir(f.Stream) != wantDir ||
		filepath.Dir(f.Stderr) != wantDir {
		t.Errorf("files = %+v", f)
	}
	if fi, err := os.Stat(f.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("attempt dir: %v %v, want 0700", fi.Mode(), err)
	}
	for _, p := range []string{f.Settings, f.MCPConfig} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", p, fi.Mode(), err)
		}
	}

	var settings struct {
		DisableAllHooks *bool `json:"disableAllHooks"`
		Hooks           map[string][]struct {
			Matcher string
			Hooks   []struct {
				Type, Command string
				Timeout       int
				OnFailure     string
			}
		}
	}
	sessionTestReadJSON(t, f.Settings, &settings)
	if settings.DisableAllHooks == nil || *settings.DisableAllHooks {
		t.Errorf("disableAllHooks must be written as false")
	}
	var command string
	for _, ev := range []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"} {
		m := settings.Hooks[ev]
		// The hold (40 s), three probes (5 s), two reconnects (the
		// default 5 s) and a margin of 30 s: the hook's own bound ends a
		// hold before Claude Code's timeout lets the call through.
		if len(m) != 1 || m[0].Matcher != "mcp__.*" || len(m[0].Hooks) != 1 || m[0].Hooks[0].Type != "command" ||
			m[0].Hooks[0].Timeout != 95 {
			t.Fatalf("%s hook = %+v", ev, m)
		}
		// If that bound is ever missed, 2.1.332 denies the call.
		if wantBlock := ev == "PreToolUse"; (m[0].Hooks[0].OnFailure == "block") != wantBlock {
			t.Errorf("%s hook onFailure = %q", ev, m[0].Hooks[0].OnFailure)
		}
		command = m[0].Hooks[0].Command
	}
	got := sessionTestSplit(t, command)
	want := []string{spec.Binary, "hook", "--state", f.Cache, "--events", f.Events,
		"--ttl", "2m0s", "--backoff", "2s", "--max-backoff", "1m0s", "--failure-threshold", "3", "--max-hold", "40s", "--probe-timeout", "5s"}
	if !slices.Equal(got, want) {
		t.Errorf("the shell splits the hook command into\n%q\nwant\n%q", got, want)
	}

	var mcp struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	sessionTestReadJSON(t, f.MCPConfig, &mcp)
	if len(mcp.MCPServers) != 2 || mcp.MCPServers["other"] != nil {
		t.Fatalf("mcp.json servers = %v, want only notes and search", mcp.MCPServers)
	}
	n := mcp.MCPServers["notes"]
	// Started through exec-server, with only its own env's names kept.
	if n["command"] != spec.Binary || fmt.Sprint(n["args"]) != "[exec-server --server notes --keep LOG_LEVEL,NOTES_API_KEY -- /usr/local/bin/notes-mcp --db /var/notes.db]" ||
		n["alwaysLoad"] != true || n["timeout"] != 1500.0 {
		t.Errorf("notes entry = %v", n)
	}
	if env, _ := n["env"].(map[string]any); env["NOTES_API_KEY"] != "from-env-file" || env["LOG_LEVEL"] != "debug" {
		t.Errorf("notes env = %v, want the required key and its own", n["env"])
	}
	if s := mcp.MCPServers["search"]; s["alwaysLoad"] != false || s["type"] != "http" {
		t.Errorf("search entry = %v, want the user's alwaysLoad false kept", s)
	}
	if data, _ := os.ReadFile(f.MCPConfig); strings.Contains(string(data), "${") {
		t.Errorf("mcp.json still has a variable:\n%s", data)
	}

	// A second attempt gets its own folder; the shared files stay shared.
	spec.Attempt = 2
	f2, err := Prepare(spec)
	if err != nil || f2.Dir == f.Dir || f2.Cache != f.Cache {
		t.Errorf("attempt 2: %+v, %v", f2, err)
	}
}

func TestPrepareSessionFailOpenOnlyWhenAsked(t *testing.T) {
	b := sessionTestBatch(t)
	b.FailOpen = true
	spec := sessionTestSpec(b, sessionTestJob("j", "x"), "NIGHTWATCH_FAIL_OPEN=1")
	f, err := Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(f.Settings)
	if !strings.Contains(string(data), "--fail-open") {
		t.Errorf("a fail-open batch's hook lacks --fail-open:\n%s", data)
	}
	if env := Environ(b, spec.Env); !slices.Contains(env, "NIGHTWATCH_FAIL_OPEN=1") {
		t.Errorf("a fail-open batch lost NIGHTWATCH_FAIL_OPEN: %v", env)
	}
}

func TestPrepareSessionRefuses(t *testing.T) {
	for name, mutate := range map[string]func(*Spec){
		"relative binary":  func(s *Spec) { s.Binary = "nightwatch" },
		"bare":             func(s *Spec) { s.Batch.Agent.Args = []string{"--bare"} },
		"job name is path": func(s *Spec) { s.Job.Name = "../escape" },
		"attempt 0":        func(s *Spec) { s.Attempt = 0 },
		"unknown server":   func(s *Spec) { s.Job.Servers = []string{"nope"} },
		"required env unset": func(s *Spec) {
			srv := sessionTestStdio("notes", "/bin/notes")
			srv.RequiresEnv = []string{"NOTES_API_KEY"}
			s.Batch.Servers = []*jobs.Server{srv}
			s.Job.Servers = []string{"notes"}
		},
		"http entry without url": func(s *Spec) {
			s.Batch.Servers = []*jobs.Server{{Name: "web", MCP: mcpconfig.Server{Name: "web",
				Raw: json.RawMessage(`{"url": "https://x.example/mcp"}`)}}}
			s.Job.Servers = []string{"web"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			spec := sessionTestSpec(sessionTestBatch(t), sessionTestJob("j", "x"))
			mutate(&spec)
			if f, err := Prepare(spec); err == nil {
				t.Errorf("Prepare succeeded: %+v", f)
			} else {
				t.Log(err)
			}
		})
	}
}

func TestSessionEnv(t *testing.T) {
	b := &jobs.Batch{Env: map[string]string{"LANG": "C.UTF-8", "HOME": "/batch/home", "ECC_MCP_HEALTH_FAIL_OPEN": "1"}}
	base := []string{"HOME=/home/u", "ANTHROPIC_API_KEY=k", "NIGHTWATCH_FAIL_OPEN=true", "PATH=/bin"}
	got := Environ(b, base)
	want := []string{"HOME=/batch/home", "ANTHROPIC_API_KEY=k", "PATH=/bin", "LANG=C.UTF-8", "MCP_CONNECTION_NONBLOCKING=0"}
	if !slices.Equal(got, want) {
		t.Errorf("Environ =\n%q\nwant\n%q", got, want)
	}
	b.Env["MCP_CONNECTION_NONBLOCKING"] = "1"
	if v, _ := lookup(Environ(b, base), "MCP_CONNECTION_NONBLOCKING"); v != "1" {
		t.Errorf("the batch's MCP_CONNECTION_NONBLOCKING was overridden: %q", v)
	}
}

// The command's environment adds what only the job sets: MCP_TIMEOUT from
// mcp_timeout, and each of its servers' batch reconnect command under the
// name the hook reads (never on a command line).
func TestCommandEnviron(t *testing.T) {
	notes := sessionTestStdio("notes", "/bin/true")
	notes.Reconnect = "pm2 restart notes --token-file /run/t"
	other := sessionTestStdio("agent-memory.v2", "/bin/true")
	other.Reconnect = "systemctl restart mem"
	global := sessionTestStdio("command", "/bin/true")
	global.Reconnect = "restart everything"
	plain := sessionTestStdio("plain", "/bin/true")
	b := sessionTestBatch(t, notes, other, global, plain)
	b.Agent.Command = "/usr/bin/claude"
	job := sessionTestJob("j", "hi", "notes", "agent-memory.v2", "command", "plain")
	job.MCPTimeout = 45 * time.Second
	spec := sessionTestSpec(b, job, "PATH=/bin", "MCP_TIMEOUT=1", "NIGHTWATCH_RECONNECT_NOTES=user's own")
	cmd := Command(context.Background(), spec, Files{Settings: "/s", MCPConfig: "/m"})
	get := func(k string) string { v, _ := lookup(cmd.Env, k); return v }
	for k, want := range map[string]string{
		"MCP_TIMEOUT": "45000",
		// The first turn waits for the servers as long as each may take
		// (2.1.197's own wait is 5 s).
		"MCP_CONNECT_TIMEOUT_MS":               "45000",
		"NIGHTWATCH_RECONNECT_NOTES":           "pm2 restart notes --token-file /run/t",
		"NIGHTWATCH_RECONNECT_AGENT_MEMORY_V2": "systemctl restart mem",
		"NIGHTWATCH_RECONNECT_COMMAND":         "", // would apply to every server
		"NIGHTWATCH_RECONNECT_PLAIN":           "",
		"PATH":                                 "/bin",
		// No call becomes an MCP task nobody follows (issue 20).
		"CLAUDE_CODE_DISABLE_MCP_TASKS": "1",
		// The hooks keep the job's side-effect ledger.
		"NIGHTWATCH_EFFECTS":         statedir.Effects(b.StateDir, spec.RunID, "j"),
		"NIGHTWATCH_EFFECTS_ATTEMPT": strconv.Itoa(spec.Attempt),
	} {
		if got := get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	for _, a := range cmd.Args {
		if strings.Contains(a, "pm2") {
			t.Errorf("a reconnect command is on the command line: %q", cmd.Args)
		}
	}
	// The batch's own value of the tasks switch stands, and its own wait.
	cmd = Command(context.Background(), sessionTestSpec(b, job, "CLAUDE_CODE_DISABLE_MCP_TASKS=0", "MCP_CONNECT_TIMEOUT_MS=1234"), Files{Settings: "/s", MCPConfig: "/m"})
	if got := get("CLAUDE_CODE_DISABLE_MCP_TASKS"); got != "0" {
		t.Errorf("CLAUDE_CODE_DISABLE_MCP_TASKS = %q, want the batch's 0", got)
	}
	if got := get("MCP_CONNECT_TIMEOUT_MS"); got != "1234" {
		t.Errorf("MCP_CONNECT_TIMEOUT_MS = %q, want the batch's 1234", got)
	}
	// Another job of the batch does not get these servers' commands.
	job2 := sessionTestJob("k", "hi", "plain")
	cmd = Command(context.Background(), sessionTestSpec(b, job2), Files{Settings: "/s", MCPConfig: "/m"})
	if v, ok := lookup(cmd.Env, "NIGHTWATCH_RECONNECT_NOTES"); ok {
		t.Errorf("job without notes got its reconnect command %q", v)
	}
}

func TestSessionCommandArgs(t *testing.T) {
	b := sessionTestBatch(t)
	b.Agent = jobs.Agent{Command: "/usr/bin/claude", Args: []string{"--max-turns", "40"}}
	job := sessionTestJob("j", "summarize the inbox")
	job.AllowedTools = []string{"mcp__notes__*", "Read"}
	spec := sessionTestSpec(b, job)
	f := Files{Settings: "/s/settings.json", MCPConfig: "/s/mcp.json"}

	cmd := Command(context.Background(), spec, f)
	want := []string{"/usr/bin/claude", "-p", "summarize the inbox", "--settings", "/s/settings.json",
		"--mcp-config", "/s/mcp.json", "--strict-mcp-config", "--output-format", "stream-json", "--verbose",
		"--max-turns", "40", "--allowedTools", "mcp__notes__*", "Read"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args =\n%q\nwant\n%q", cmd.Args, want)
	}
	if cmd.Dir != job.Cwd || cmd.Stdin != nil || !inOwnGroup(cmd) {
		t.Errorf("dir %q stdin %v sysprocattr %+v", cmd.Dir, cmd.Stdin, cmd.SysProcAttr)
	}
	for _, a := range cmd.Args {
		if a == "--bare" || a == "--dangerously-skip-permissions" {
			t.Errorf("args have %s", a)
		}
	}

	// A prompt that looks like a flag goes through stdin.
	job.Prompt = "--- nightly report\ndo it"
	cmd = Command(context.Background(), spec, f)
	if slices.Contains(cmd.Args, job.Prompt) || cmd.Stdin == nil {
		t.Errorf("a prompt starting with '-' is an argument: %q", cmd.Args)
	}
}

func TestJudge(t *testing.T) {
	job := &jobs.Job{Timeout: 45 * time.Minute, StallTimeout: 10 * time.Minute}
	success := &ResultEvent{Subtype: "success"}
	for _, tc := range []struct {
		name     string
		exit     int
		killedBy Killer
		result   *ResultEvent
		stderr   string
		status   string
		reason   string
	}{
		{"done", 0, "", success, "", "done", ""},
		{"timeout", -1, "timeout", nil, "", "failed", "killed after 45m timeout"},
		{"stall", -1, "stall", nil, "", "failed", "no output for 10m (stall)"},
		{"stopped with a success result", 0, "stopped", success, "", "failed", "stopped by the supervisor"},
		{"sigterm 143 with a success result", 143, "", success, "", "failed", "exit 143 after a success result"},
		{"no result", 1, "", nil, "Error: Invalid MCP configuration: bad", "failed",
			"exit 1: no result event: Error: Invalid MCP configuration: bad"},
		{"max turns", 1, "", &ResultEvent{Subtype: "error_max_turns", IsError: true,
			Errors: []string{"Reached maximum number of turns (40)"}}, "", "failed",
			"exit 1: error_max_turns: Reached maximum number of turns (40)"},
		{"sigint", 0, "", &ResultEvent{Subtype: "error_during_execution", IsError: true,
			TerminalReason: "aborted_tools"}, "", "failed", "exit 0: error_during_execution (aborted_tools)"},
		{"api error", 1, "", &ResultEvent{Subtype: "success", IsError: true, APIErrorStatus: 404,
			Result: "API Error: 404\nnot found"}, "", "failed", "api error 404: API Error: 404 not found"},
		{"is_error", 0, "", &ResultEvent{Subtype: "success", IsError: true, Result: "hook stopped"}, "",
			"failed", "exit 0: the result is an error: hook stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := Outcome{ExitCode: tc.exit, KilledBy: tc.killedBy}
			judge(&out, tc.result, job, nil, tc.stderr)
			if out.Status != tc.status || out.Reason != tc.reason {
				t.Errorf("got %s %q, want %s %q", out.Status, out.Reason, tc.status, tc.reason)
			}
		})
	}
}

// sessionTestObserver records what Run told it.
type sessionTestObserver struct {
	mu       sync.Mutex
	statuses map[string]ServerStatus
	tools    []string
	unusable []string // the servers it was told to stop the attempt for
	pgid     int
	// stamps are the attempts the observations were of ("job#attempt").
	stamps map[string]bool
}

func (o *sessionTestObserver) Observe(s Observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stamps == nil {
		o.stamps = map[string]bool{}
	}
	o.stamps[fmt.Sprintf("%s#%d", s.Job, s.Attempt)] = true
	switch s.Kind {
	case SawServer:
		if o.statuses == nil {
			o.statuses = map[string]ServerStatus{}
		}
		o.statuses[s.Server] = s.Status
	case SawMissingTool:
		o.tools = append(o.tools, s.Tool)
	case SawUnusable:
		o.unusable = append(o.unusable, s.Server)
	case SawProcess:
		o.pgid = s.PGID
	}
}

// sessionTestClaudeEnv is the environment testkit.RunClaude gives the real
// CLI: the fake API, a throw-away HOME, no other traffic. A fail-open
// variable rides along to prove it is taken out.
func sessionTestClaudeEnv(t *testing.T, api *fakeapi.Server) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"ANTHROPIC_BASE_URL=" + api.URL(),
		"ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"MCP_CONNECT_TIMEOUT_MS=" + strconv.Itoa(testkit.DefaultMCPConnectTimeoutMS),
		"NIGHTWATCH_FAIL_OPEN=1",
	}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	return env
}

// sessionTestRun prepares and runs one attempt, logging its files if the
// test fails.
func sessionTestRun(t *testing.T, ctx context.Context, spec Spec) (Outcome, Files, *sessionTestObserver) {
	t.Helper()
	f, err := Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	obs := &sessionTestObserver{}
	out := Run(ctx, spec, f, obs)
	t.Cleanup(func() {
		if t.Failed() {
			stream, _ := os.ReadFile(f.Stream)
			stderr, _ := os.ReadFile(f.Stderr)
			if len(stream) > 4000 {
				stream = stream[len(stream)-4000:]
			}
			t.Logf("outcome: %+v\n--- stream (tail) ---\n%s\n--- stderr ---\n%s", out, stream, stderr)
		}
	})
	return out, f, obs
}

// TestSessionRealClaude runs sessions through the pinned Claude Code CLI,
// the fake Messages API, nightwatch's hook and real MCP servers, on every
// supported CLI version.
func TestSessionRealClaude(t *testing.T) { testkit.ForEachClaude(t, testSessionRealClaude) }

func testSessionRealClaude(t *testing.T, version string) {
	claude := testkit.ClaudeBinOf(t, version)
	server := testkit.BuildTestServer(t)
	// The hook binary too sits in a folder whose name needs quoting.
	binDir := filepath.Join(t.TempDir(), "night watch's bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(binDir, "nightwatch")
	if err := os.Symlink(testkit.BuildNightwatch(t), binary); err != nil {
		t.Fatal(err)
	}
	api := fakeapi.Start(t)

	newSpec := func(t *testing.T, job *jobs.Job, servers ...*jobs.Server) Spec {
		b := sessionTestBatch(t, servers...)
		b.Agent.Command = claude
		b.Env["NOTES_API_KEY"] = "sk-session-test"
		job.Cwd = t.TempDir()
		spec := sessionTestSpec(b, job, sessionTestClaudeEnv(t, api)...)
		spec.Binary = binary
		return spec
	}
	// notes only starts when NOTES_API_KEY reaches it through its env.
	notes := func() *jobs.Server {
		s := sessionTestStdio("notes", server, "--mode", "require-env=NOTES_API_KEY")
		s.RequiresEnv = []string{"NOTES_API_KEY"}
		return s
	}

	t.Run("done", func(t *testing.T) {
		t.Parallel()
		job := sessionTestJob("echo", "SESSION sess-done\n"+`CALL mcp__notes__echo {"message":"hello"}`, "notes")
		job.AllowedTools = []string{"mcp__notes"}
		spec := newSpec(t, job, notes())
		out, f, obs := sessionTestRun(t, context.Background(), spec)
		if out.Status != "done" || out.Reason != "" || out.ExitCode != 0 || out.KilledBy != "" {
			t.Fatalf("outcome %s %q exit %d killed %q", out.Status, out.Reason, out.ExitCode, out.KilledBy)
		}
		if out.NumTurns < 2 || out.CostUSD <= 0 || out.SessionID == "" || out.Subtype != "success" ||
			out.TerminalReason != "completed" || out.DurationMS <= 0 {
			t.Errorf("result fields: %+v", out)
		}
		// A connected server is nothing the night acts on: the observer
		// hears only of a server the session cannot use.
		if len(obs.statuses) != 0 || len(out.ServersFailed) != 0 || len(out.Servers) != 1 || out.Servers[0].Status != ServerConnected {
			t.Errorf("observer statuses %v, failed %v, servers %+v", obs.statuses, out.ServersFailed, out.Servers)
		}
		if want := fmt.Sprintf("%s#%d", spec.Job.Name, spec.Attempt); len(obs.stamps) != 1 || !obs.stamps[want] {
			t.Errorf("the observations were of %v, want only %s", obs.stamps, want)
		}
		if obs.pgid <= 0 {
			t.Errorf("SessionStarted was not called")
		}
		got := api.SessionToolResults("sess-done")
		if len(got) != 1 || got[0].IsError || !strings.Contains(got[0].Content, "hello") {
			t.Errorf("the model saw %+v", got)
		}
		// The injected hook ran: it recorded notes in the batch's cache.
		cache, err := (&healthcheck.Store{Path: f.Cache}).Read()
		if err != nil {
			t.Fatal(err)
		}
		if e := cache.Entry("notes"); e == nil || e.Status != healthcheck.StatusHealthy {
			t.Errorf("cache entry for notes = %+v, want healthy (the hook did not run?)", e)
		}
		if fi, err := os.Stat(f.Stream); err != nil || fi.Size() == 0 || fi.Mode().Perm() != 0o600 {
			t.Errorf("stream.jsonl: %v %v", fi, err)
		}
	})

	t.Run("server-fails-to-start", func(t *testing.T) {
		t.Parallel()
		job := sessionTestJob("broken", "SESSION sess-broken\n"+`CALL mcp__broken__echo {"message":"x"}`, "broken")
		job.AllowedTools = []string{"mcp__broken"}
		spec := newSpec(t, job, sessionTestStdio("broken", server, "--mode", "exit-at-start"))
		out, _, obs := sessionTestRun(t, context.Background(), spec)
		if obs.statuses["broken"] != "failed" || !slices.Equal(out.ServersFailed, []string{"broken"}) {
			t.Errorf("observer statuses %v, outcome failed servers %v", obs.statuses, out.ServersFailed)
		}
		if !slices.Equal(obs.tools, []string{"mcp__broken__echo"}) || !slices.Equal(out.ToolsUnavailable, obs.tools) {
			t.Errorf("tools unavailable: observer %v, outcome %v", obs.tools, out.ToolsUnavailable)
		}
		// The CLI itself finished normally, but the job could not do its
		// work: never done (issue 10), and the server is named.
		if out.Status != "failed" || out.Reason != "server broken could not be used (failed at start)" ||
			!slices.Equal(out.Unusable, []Unusable{{Server: "broken", Why: "failed at start"}}) {
			t.Errorf("outcome %s %q unusable %+v", out.Status, out.Reason, out.Unusable)
		}
	})

	// One session for two things, each of which alone would fail it: the
	// prompt starts with "-", so it must reach the CLI through stdin (as an
	// argument it would be read as a flag and the session would not run),
	// and with no allowed_tools the session is allowed its servers' tools
	// by the rule mcp__<server>, which both versions accept (a denial
	// fails the job and the model sees no result).
	t.Run("default-allowed-tools-prompt-through-stdin", func(t *testing.T) {
		t.Parallel()
		job := sessionTestJob("default", "--- nightly, read as a flag if passed as an argument\nSESSION sess-default\n"+
			`CALL mcp__notes__echo {"message":"allowed by default, via stdin"}`, "notes")
		spec := newSpec(t, job, notes())
		out, _, _ := sessionTestRun(t, context.Background(), spec)
		if out.Status != "done" || len(out.Denied) != 0 {
			t.Errorf("outcome %s %q denied %q", out.Status, out.Reason, out.Denied)
		}
		if got := api.SessionToolResults("sess-default"); len(got) != 1 || got[0].IsError || !strings.Contains(got[0].Content, "allowed by default, via stdin") {
			t.Errorf("the model saw %+v", got)
		}
	})

	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		job := sessionTestJob("denied", "SESSION sess-denied\n"+`CALL mcp__notes__echo {"message":"x"}`, "notes")
		job.AllowedTools, job.AllowedToolsSet = []string{"Read"}, true
		out, _, _ := sessionTestRun(t, context.Background(), newSpec(t, job, notes()))
		if out.Status != "failed" || out.Reason != "permission denied: mcp__notes__echo (not allowed for this job)" {
			t.Errorf("outcome %s %q", out.Status, out.Reason)
		}
	})

	t.Run("verify", func(t *testing.T) {
		t.Parallel()
		job := sessionTestJob("verify", "SESSION sess-verify\n"+`CALL mcp__notes__echo {"message":"x"}`, "notes")
		job.AllowedTools = []string{"mcp__notes"}
		spec := newSpec(t, job, notes())
		check := filepath.Join(job.Cwd, "check.sh")
		if err := os.WriteFile(check, []byte("#!/bin/sh\npwd\necho \"NOTES_API_KEY=$NOTES_API_KEY\"\necho 'FAIL: 2 of 9'\nexit 3\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		job.Verify = &jobs.Verify{Command: []string{check}, Timeout: 10 * time.Second}
		out, _, _ := sessionTestRun(t, context.Background(), spec)
		v := out.Verify
		if out.Status != "failed" || v == nil || v.OK || v.ExitCode != 3 || !strings.HasPrefix(out.Reason, "verify failed (exit 3): ") ||
			!strings.Contains(out.Reason, "FAIL: 2 of 9") || !strings.Contains(v.Output, job.Cwd) {
			t.Fatalf("outcome %s %q verify %+v", out.Status, out.Reason, v)
		}
		if strings.Contains(v.Output, "sk-session-test") || strings.Contains(out.Reason, "sk-session-test") {
			t.Errorf("the check's output leaks the server's secret: %q", v.Output)
		}
		if fb := v.Feedback(); !strings.Contains(fb, "FAIL: 2 of 9") || !strings.Contains(fb, "exited 3") {
			t.Errorf("feedback %q", fb)
		}
	})
}

// sessionTestAgent writes a shell script that stands in for claude.
func sessionTestAgent(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-claude")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func sessionTestFakeSpec(t *testing.T, script string, timeout, stall time.Duration) (Spec, string) {
	b := sessionTestBatch(t)
	b.Agent.Command = sessionTestAgent(t, script)
	job := sessionTestJob("fake", "x")
	job.Timeout, job.StallTimeout = timeout, stall
	pids := filepath.Join(t.TempDir(), "pids")
	spec := sessionTestSpec(b, job, "PATH=/usr/bin:/bin", "PIDS="+pids)
	spec.Binary = "/bin/true"
	return spec, pids
}

const sessionTestInit = `echo '{"type":"system","subtype":"init","session_id":"fake-1","mcp_servers":[{"name":"notes","status":"needs-auth"}]}'` + "\n"

// sessionTestGone reports whether every pid in the file has ended. A
// zombie counts as ended: it runs nothing, and in a container nobody may
// reap it.
func sessionTestGone(t *testing.T, pidFile string) bool {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the fake agent wrote no pids: %v", err)
	}
	for _, f := range strings.Fields(string(data)) {
		pid, _ := strconv.Atoi(f)
		if pid <= 0 {
			continue
		}
		if !proc.Alive(pid) {
			continue
		}
		if runtime.GOOS == "linux" {
			stat, err := os.ReadFile("/proc/" + f + "/stat")
			if err != nil {
				continue
			}
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i:]), ") Z") {
				continue
			}
		} else if out, _ := exec.Command("ps", "-o", "stat=", "-p", f).Output(); strings.HasPrefix(string(out), "Z") {
			continue
		}
		t.Logf("pid %d is still running", pid)
		return false
	}
	return true
}

func sessionTestWaitGone(t *testing.T, pidFile string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // only a survivor runs it out
	for !sessionTestGone(t, pidFile) {
		if time.Now().After(deadline) {
			t.Fatalf("processes of the session's group survived it")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSessionTimeoutKillsTheGroup(t *testing.T) {
	t.Parallel()
	// Output keeps flowing (no stall); a background child ignores SIGTERM
	// and has its own stdout, so only the group kill at the end gets it.
	spec, pids := sessionTestFakeSpec(t, sessionTestInit+`
(trap '' TERM; exec sleep 600) >/dev/null 2>&1 &
echo $! >> "$PIDS"
sleep 600 &
echo $! >> "$PIDS"
echo $$ >> "$PIDS"
while :; do echo '{"type":"assistant"}'; sleep 0.1; done
`, time.Second, 30*time.Second)
	start := time.Now()
	out, _, obs := sessionTestRun(t, context.Background(), spec)
	took := time.Since(start)
	if out.Status != "failed" || out.KilledBy != KilledTimeout || out.Reason != "killed after 1s timeout" {
		t.Errorf("outcome %s %q killed by %q", out.Status, out.Reason, out.KilledBy)
	}
	// Not before the timeout: a lower bound the test set, which no
	// machine is too slow for. How much later is the machine's, and the
	// reason above already says the timeout cut it.
	if took < time.Second {
		t.Errorf("killed after %s, before its 1 s timeout", took)
	}
	if out.SessionID != "fake-1" || obs.statuses["notes"] != "needs-auth" || !slices.Equal(out.ServersFailed, []string{"notes"}) {
		t.Errorf("init not read: session %q statuses %v failed %v", out.SessionID, obs.statuses, out.ServersFailed)
	}
	sessionTestWaitGone(t, pids)
}

func TestSessionStall(t *testing.T) {
	t.Parallel()
	spec, pids := sessionTestFakeSpec(t, sessionTestInit+`
echo $$ >> "$PIDS"
sleep 600 &
echo $! >> "$PIDS"
wait
`, 30*time.Second, time.Second)
	start := time.Now()
	out, _, _ := sessionTestRun(t, context.Background(), spec)
	took := time.Since(start)
	if out.Status != "failed" || out.KilledBy != KilledStall || out.Reason != "no output for 1s (stall)" {
		t.Errorf("outcome %s %q killed by %q", out.Status, out.Reason, out.KilledBy)
	}
	// Not before the stall timeout (a lower bound the test set); the
	// reason above says the stall watchdog cut it.
	if took < time.Second {
		t.Errorf("killed after %s, before its 1 s stall timeout", took)
	}
	sessionTestWaitGone(t, pids)
}

func TestSessionSteadyOutputIsNoStall(t *testing.T) {
	t.Parallel()
	// 3 s of output every 0.05 s, with a 1.5 s stall timeout: the session
	// outlasts the stall timeout, so only output resetting the watchdog
	// keeps it alive, and a gap would have to grow 30-fold on a busy
	// machine to look like a stall. The last line has no newline, as a
	// crash could leave it.
	spec, _ := sessionTestFakeSpec(t, sessionTestInit+`
i=0
while [ $i -lt 60 ]; do echo '{"type":"assistant"}'; sleep 0.05; i=$((i+1)); done
printf '%s' '{"type":"result","subtype":"success","is_error":false,"num_turns":3,"total_cost_usd":0.25,"session_id":"fake-1"}'
`, 30*time.Second, 1500*time.Millisecond)
	out, _, _ := sessionTestRun(t, context.Background(), spec)
	if out.Status != "done" || out.NumTurns != 3 || out.CostUSD != 0.25 {
		t.Errorf("outcome %+v", out)
	}
}

func TestSessionStoppedIsNeverDone(t *testing.T) {
	t.Parallel()
	// Like Claude Code after SIGTERM: a success result, then exit 0.
	spec, pids := sessionTestFakeSpec(t, sessionTestInit+`
trap 'echo "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"num_turns\":1}"; exit 0' TERM
echo $$ >> "$PIDS"
sleep 600 &
echo $! >> "$PIDS"
wait
`, 30*time.Second, 30*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Stop it once its trap is set (both pids written), not after a fixed
	// time a busy machine may not have started the script in.
	go func() {
		defer cancel()
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			if b, _ := os.ReadFile(pids); len(strings.Fields(string(b))) >= 2 {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	out, _, _ := sessionTestRun(t, ctx, spec)
	if out.Status != "failed" || out.KilledBy != KilledStopped || out.Reason != "stopped by the supervisor" {
		t.Errorf("outcome %s %q killed by %q", out.Status, out.Reason, out.KilledBy)
	}
	if out.ExitCode != 0 || out.Subtype != "success" {
		t.Errorf("the script's trap did not run: exit %d subtype %q", out.ExitCode, out.Subtype)
	}
	sessionTestWaitGone(t, pids)
}

func TestSessionNoResult(t *testing.T) {
	t.Parallel()
	spec, _ := sessionTestFakeSpec(t, `echo 'not json at all'
echo 'Error: Invalid MCP configuration: mcpServers is missing' >&2
exit 1
`, 30*time.Second, 30*time.Second)
	out, f, _ := sessionTestRun(t, context.Background(), spec)
	want := "exit 1: no result event: Error: Invalid MCP configuration: mcpServers is missing"
	if out.Status != "failed" || out.Reason != want || out.ExitCode != 1 {
		t.Errorf("outcome %s %q exit %d, want %q", out.Status, out.Reason, out.ExitCode, want)
	}
	if stream, _ := os.ReadFile(f.Stream); string(stream) != "not json at all\n" {
		t.Errorf("stream.jsonl = %q", stream)
	}
}

func TestSessionAgentMissing(t *testing.T) {
	spec, _ := sessionTestFakeSpec(t, "", time.Minute, time.Minute)
	spec.Batch.Agent.Command = filepath.Join(t.TempDir(), "no-claude-here")
	out, _, _ := sessionTestRun(t, context.Background(), spec)
	if out.Status != "failed" || !strings.HasPrefix(out.Reason, "cannot start ") || out.ExitCode != -1 {
		t.Errorf("outcome %s %q exit %d", out.Status, out.Reason, out.ExitCode)
	}
}

// A planted symlink anywhere below state_dir (the run's folder, the job's,
// the attempt's) is refused: MkdirAll would follow it and the settings and
// MCP config would replace files in the link's target.
func TestPrepareSessionRefusesSymlinkedFolders(t *testing.T) {
	for _, level := range []string{"runs", "runs/20260101T020000Z", "runs/20260101T020000Z/j", "runs/20260101T020000Z/j/attempt-1"} {
		t.Run(level, func(t *testing.T) {
			spec := sessionTestSpec(sessionTestBatch(t), sessionTestJob("j", "x"))
			target := t.TempDir()
			victim := filepath.Join(target, "settings.json")
			if err := os.WriteFile(victim, []byte("theirs"), 0o600); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(spec.Batch.StateDir, filepath.FromSlash(level))
			if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			if f, err := Prepare(spec); err == nil {
				t.Fatalf("Prepare wrote through %s: %+v", level, f)
			} else if !strings.Contains(err.Error(), "symlink") {
				t.Errorf("error %v does not say why", err)
			}
			entries, _ := os.ReadDir(target)
			if b, _ := os.ReadFile(victim); string(b) != "theirs" || len(entries) != 1 {
				t.Errorf("the link's target changed: %q, %d entries", b, len(entries))
			}
		})
	}
}

// run --dry-run prints the MCP config the session would get: the one
// Prepare writes, stdio servers started through exec-server, not the bare
// definitions.
func TestDryRunShowsTheWrittenMCPConfig(t *testing.T) {
	notes := sessionTestStdio("notes", "/usr/local/bin/notes-mcp", "--db", "/var/notes.db")
	b := sessionTestBatch(t, notes)
	spec := sessionTestSpec(b, sessionTestJob("j", "hello", "notes"), "PATH=/usr/bin:/bin")
	plan, err := DryRun(spec)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(f.MCPConfig)
	if err != nil {
		t.Fatal(err)
	}
	if plan.MCPConfig != string(written) {
		t.Errorf("dry run shows MCP config\n%s\nthe session gets\n%s", plan.MCPConfig, written)
	}
	if !strings.Contains(plan.MCPConfig, "exec-server") {
		t.Errorf("dry run's MCP config does not start notes through exec-server:\n%s", plan.MCPConfig)
	}
}

// A cluster worker's session: its hooks get the claims socket's path, and
// nothing of the session (hook, server, model) gets the connection string,
// from the worker's environment or from env_file.
func TestCommandEnvironInACluster(t *testing.T) {
	b := sessionTestBatch(t)
	b.Agent.Command = "/usr/bin/claude"
	b.Cluster = &jobs.Cluster{DatabaseEnv: "NW_PG"}
	b.Env = map[string]string{"NW_PG": "postgres://nw:pw@db/nw", "KEEP": "1"}
	job := sessionTestJob("j", "hi")
	for _, spec := range []Spec{sessionTestSpec(b, job, "PATH=/bin", "NW_PG=postgres://nw:pw@db/nw")} {
		spec.PeersSocket = "/tmp/nightwatch-0/ab12.sock"
		cmd := Command(context.Background(), spec, Files{Settings: "/s", MCPConfig: "/m"})
		if v, _ := lookup(cmd.Env, PeersSocketEnv); v != spec.PeersSocket {
			t.Errorf("%s = %q, want the relay's socket", PeersSocketEnv, v)
		}
		if v, ok := lookup(cmd.Env, "NW_PG"); ok {
			t.Errorf("the session got the connection string: NW_PG=%q", v)
		}
		if v, _ := lookup(cmd.Env, "KEEP"); v != "1" {
			t.Errorf("env_file's other variables are gone: KEEP=%q", v)
		}
	}
	spec := sessionTestSpec(b, job)
	cmd := Command(context.Background(), spec, Files{Settings: "/s", MCPConfig: "/m"})
	if v, ok := lookup(cmd.Env, PeersSocketEnv); ok {
		t.Errorf("a session without a relay got %s=%q", PeersSocketEnv, v)
	}
}

// Spec.Ready is asked once the session's logs are open and before the
// agent is spawned: while it waits, the logs exist and the agent has not
// run; false spawns nothing and ends the session "not started", stopped;
// true lets it run as without Ready.
func TestReadyGatesTheSpawn(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allowed", false: "refused"}[allow], func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "spawned")
			script := "touch " + text.ShellQuote(marker) + "\n" +
				`echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0,"session_id":"s"}'` + "\n"
			spec, _ := sessionTestFakeSpec(t, script, time.Minute, time.Minute)
			f, err := Prepare(spec)
			if err != nil {
				t.Fatal(err)
			}
			asked, answer := make(chan struct{}), make(chan bool)
			spec.Ready = func() bool {
				close(asked)
				return <-answer
			}
			done := make(chan Outcome, 1)
			go func() { done <- Run(context.Background(), spec, f, nil) }()
			select {
			case <-asked:
			case out := <-done:
				t.Fatalf("the session ended without asking Ready: %s %q", out.Status, out.Reason)
			}
			if _, err := os.Lstat(f.Stream); err != nil {
				t.Errorf("the stream log is not open while Ready waits: %v", err)
			}
			if _, err := os.Lstat(marker); !os.IsNotExist(err) {
				t.Fatalf("the agent ran before Ready answered: %v", err)
			}
			answer <- allow
			out := <-done
			_, err = os.Lstat(marker)
			switch {
			case allow && (err != nil || out.Status != Done):
				t.Errorf("allowed: agent ran: %v; outcome %s %q", err, out.Status, out.Reason)
			case !allow && (!os.IsNotExist(err) || out.Status != Failed || out.KilledBy != KilledStopped || !strings.Contains(out.Reason, "not started")):
				t.Errorf("refused: agent ran: %v; outcome %s %q killed by %q", err, out.Status, out.Reason, out.KilledBy)
			}
			// A job without servers shares the run's MCP config, which
			// holds nothing secret (TestMCPConfigSharedOnlyWithoutServers).
			if _, err := os.Lstat(f.MCPConfig); !f.SharedMCPConfig || err != nil {
				t.Errorf("the run's MCP config of a job without servers: shared %v, %v", f.SharedMCPConfig, err)
			}
		})
	}
}

// The stderr log is created on the session's first byte of stderr: an
// attempt that prints none creates no file for it (one inode fewer per
// attempt); one that does has its log as before, owner-only; one whose log
// is a planted symlink writes nothing through it and says so.
func TestStderrLogOnlyWhenWritten(t *testing.T) {
	const result = `echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0,"session_id":"s"}'` + "\n"
	for _, tc := range []struct {
		name, script string
		plant        bool
		want         string // the log's content; "-" for no file
	}{
		{"quiet", result, false, "-"},
		{"speaks", "echo 'a warning' >&2\n" + result, false, "a warning\n"},
		{"speaks and fails", "echo 'it broke' >&2\nexit 3\n", false, "it broke\n"},
		{"a planted symlink", "echo 'a secret?' >&2\nexit 3\n", true, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, _ := sessionTestFakeSpec(t, tc.script, time.Minute, time.Minute)
			f, err := Prepare(spec)
			if err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(t.TempDir(), "target")
			if tc.plant {
				if err := os.Symlink(target, f.Stderr); err != nil {
					t.Fatal(err)
				}
			}
			out := Run(context.Background(), spec, f, nil)
			if b, err := os.ReadFile(target); !os.IsNotExist(err) {
				t.Errorf("written through the symlink: %q %v", b, err)
			}
			if tc.plant {
				if !strings.Contains(out.Reason, "stderr was not kept") {
					t.Errorf("the lost stderr is not said: %q", out.Reason)
				}
				return
			}
			fi, err := os.Lstat(f.Stderr)
			if tc.want == "-" {
				if !os.IsNotExist(err) {
					t.Errorf("a quiet session left a stderr log: %v", err)
				}
				if out.Status != Done {
					t.Errorf("outcome %s %q", out.Status, out.Reason)
				}
				return
			}
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("stderr log: %v %v", fi, err)
			}
			if b, _ := os.ReadFile(f.Stderr); string(b) != tc.want {
				t.Errorf("stderr log %q, want %q", b, tc.want)
			}
		})
	}
}

// The settings do not name the attempt: the run's attempts share one
// file, written by the first and not again while it holds the same bytes
// (one inode fewer per attempt); the hook finds the attempt's MCP config
// through the session's environment instead. A file that was changed, or
// a symlink put in its place, is not used: a changed file is written
// anew, a symlink refused (its target untouched).
func TestSettingsSharedByTheRunsAttempts(t *testing.T) {
	b := sessionTestBatch(t)
	specOf := func(job string, attempt int) Spec {
		s := sessionTestSpec(b, sessionTestJob(job, "hello"), "PATH=/usr/bin:/bin")
		s.Attempt = attempt
		return s
	}
	prepare := func(s Spec) Files {
		t.Helper()
		f, err := Prepare(s)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f1 := prepare(specOf("a", 1))
	if filepath.Dir(f1.Settings) != filepath.Join(b.StateDir, "runs", specOf("a", 1).RunID) {
		t.Errorf("settings at %s, want in the run's folder", f1.Settings)
	}
	first, err := os.Lstat(f1.Settings)
	if err != nil || first.Mode().Perm() != 0o600 {
		t.Fatalf("settings: %v %v", first, err)
	}
	data, _ := os.ReadFile(f1.Settings)
	if strings.Contains(string(data), "attempt-") || strings.Contains(string(data), "--config") {
		t.Errorf("the settings name an attempt:\n%s", data)
	}
	for _, s := range []Spec{specOf("a", 2), specOf("b", 1)} {
		f := prepare(s)
		if f.Settings != f1.Settings {
			t.Errorf("%s attempt %d: settings %s, want the run's shared %s", s.Job.Name, s.Attempt, f.Settings, f1.Settings)
		}
		if now, err := os.Lstat(f.Settings); err != nil || !os.SameFile(first, now) {
			t.Errorf("%s attempt %d: the settings file was written again", s.Job.Name, s.Attempt)
		}
		env := Command(context.Background(), s, f).Env
		if !slices.Contains(env, "NIGHTWATCH_MCP_CONFIG="+f.MCPConfig) {
			t.Errorf("%s attempt %d: the session's environment does not name its MCP config %s", s.Job.Name, s.Attempt, f.MCPConfig)
		}
	}

	// Changed behind the night's back: written again.
	if err := os.WriteFile(f1.Settings, []byte(`{"disableAllHooks": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	prepare(specOf("a", 3))
	if got, _ := os.ReadFile(f1.Settings); string(got) != string(data) {
		t.Errorf("a changed settings file is kept:\n%s", got)
	}
	// A symlink in its place: replaced, never written through.
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f1.Settings); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, f1.Settings); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(specOf("a", 4)); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("a symlink in place of the settings: %v, want it refused", err)
	}
	if got, _ := os.ReadFile(target); string(got) != "{}" {
		t.Errorf("written through the symlink: %s", got)
	}
}

// A job without servers gets the run's MCP config (it names no server and
// holds no secret): one file for all its attempts and the other such
// jobs, kept when a session ends. A job with servers gets its own in the
// attempt's folder, with their resolved secrets, removed when the session
// ends. Either way the session's environment names the one it got.
func TestMCPConfigSharedOnlyWithoutServers(t *testing.T) {
	const result = `echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0,"session_id":"s"}'` + "\n"
	notes := sessionTestStdio("notes", "/usr/local/bin/notes-mcp")
	notes.MCP.Env = map[string]string{"NOTES_TOKEN": "s3cret"}
	b := sessionTestBatch(t, notes)
	b.Agent.Command = sessionTestAgent(t, result)
	run := func(job *jobs.Job, attempt int) Files {
		t.Helper()
		spec := sessionTestSpec(b, job, "PATH=/usr/bin:/bin")
		spec.Binary, spec.Attempt = "/bin/true", attempt
		f, err := Prepare(spec)
		if err != nil {
			t.Fatal(err)
		}
		if env := Command(context.Background(), spec, f).Env; !slices.Contains(env, "NIGHTWATCH_MCP_CONFIG="+f.MCPConfig) {
			t.Errorf("%s: the session's environment does not name its MCP config %s", job.Name, f.MCPConfig)
		}
		if out := Run(context.Background(), spec, f, nil); out.Status != Done {
			t.Fatalf("%s: %s %q", job.Name, out.Status, out.Reason)
		}
		return f
	}

	a1 := run(sessionTestJob("a", "hello"), 1)
	if !a1.SharedMCPConfig || filepath.Dir(a1.MCPConfig) != filepath.Dir(a1.Settings) {
		t.Fatalf("a job without servers: MCP config %s (shared %v), want the run's", a1.MCPConfig, a1.SharedMCPConfig)
	}
	first, err := os.Lstat(a1.MCPConfig)
	if err != nil || first.Mode().Perm() != 0o600 {
		t.Fatalf("the run's MCP config after the session: %v %v", first, err)
	}
	for _, f := range []Files{run(sessionTestJob("a", "hello"), 2), run(sessionTestJob("b", "hello"), 1)} {
		now, err := os.Lstat(f.MCPConfig)
		if f.MCPConfig != a1.MCPConfig || err != nil || !os.SameFile(first, now) {
			t.Errorf("%s: MCP config %s (%v), want %s, not written again", f.Dir, f.MCPConfig, err, a1.MCPConfig)
		}
	}

	withServer := run(sessionTestJob("c", "hello", "notes"), 1)
	if withServer.SharedMCPConfig || filepath.Dir(withServer.MCPConfig) != withServer.Dir {
		t.Errorf("a job with servers: MCP config %s (shared %v), want its attempt's own", withServer.MCPConfig, withServer.SharedMCPConfig)
	}
	if _, err := os.Lstat(withServer.MCPConfig); !os.IsNotExist(err) {
		t.Errorf("the MCP config with the servers' secrets is left after the session: %v", err)
	}
}
