package jobs

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// writeFile writes content to dir/name, creating folders.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeExe puts an executable named name into dir and returns its path.
func fakeExe(t testing.TB, dir, name string) string {
	t.Helper()
	p := writeFile(t, dir, name, "#!/bin/sh\nexit 0\n")
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// environ is a fake process environment.
func environ(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := kv[k]
		return v, ok
	}
}

// sandbox is a temp folder with a home, a bin folder holding fake claude and
// npx, and an environment whose PATH and HOME point there.
type sandbox struct {
	dir, home, bin string
	env            map[string]string
}

func newSandbox(t testing.TB) *sandbox {
	t.Helper()
	dir := t.TempDir()
	s := &sandbox{dir: dir, home: filepath.Join(dir, "home"), bin: filepath.Join(dir, "bin")}
	fakeExe(t, s.bin, "claude")
	fakeExe(t, s.bin, "npx")
	if err := os.MkdirAll(s.home, 0o755); err != nil {
		t.Fatal(err)
	}
	s.env = map[string]string{"HOME": s.home, "PATH": s.bin}
	return s
}

const fullBatch = `version: 1
name: nightly
schedule: "0 2 * * *"
deadline: "07:05"
max_parallel: 3
max_cost_usd: 20.5
state_dir: ~/state
env_file: ./config.env
env:
  LANG: C.UTF-8
  GREETING: "hello ${NAME}"
  TOKEN: from-env
fail_open: true
agent:
  command: claude
  args: ["--max-turns", 40, "--model", "${MODEL:-sonnet}"]
defaults: {timeout: 30m, stall_timeout: 5m, retries: 2, on_unhealthy: skip, mcp_timeout: 45s, max_defer: 2h}
health: {ttl: 1m, backoff: 10s, max_backoff: 5m, probe_timeout: 3s, prewarm_timeout: 90s, reconnect_timeout: 20s, failure_threshold: 4}
servers:
  notes:
    command: npx
    args: ["-y", "@acme/notes-mcp@${NOTES_VERSION:-1.2.3}"]
    env: {NOTES_MODE: "${MODE}"}
    requires_env: [NOTES_API_KEY]
    reconnect: "pm2 restart notes"
    alwaysLoad: true
    timeout: 60000
  local:
    type: stdio
    command: ./tools/local-mcp
  search:
    type: http
    url: "https://search.example/mcp"
    headers: {Authorization: "Bearer ${SEARCH_TOKEN}"}
    headersHelper: "/usr/local/bin/make-headers"
    oauth: {clientId: "id-${NAME}", callbackPort: 8080}
    requires_env: [SEARCH_TOKEN]
jobs:
  - name: summarize-inbox
    prompt: "Summarize ${INBOX} literally"
    servers: [notes, search]
    cwd: ./work/inbox
    timeout: 20m
    retries: 0
    on_unhealthy: run
    mcp_timeout: 2m
    allowed_tools: ["mcp__notes__*", "Read"]
  - name: report.v2
    prompt_file: prompts/report.md
    servers: [local]
    needs: [summarize-inbox]
`

const fullEnvFile = `# secrets for the night
export NOTES_API_KEY=nk-123
NAME="night owl"
SEARCH_TOKEN='st-${literal}'
MODE=${NAME}-mode   # a comment
TOKEN=from-file
`

func TestLoadFull(t *testing.T) {
	sb := newSandbox(t)
	dir := filepath.Join(sb.dir, "batch")
	path := writeFile(t, dir, "nightly.yaml", fullBatch)
	writeFile(t, dir, "config.env", fullEnvFile)
	writeFile(t, dir, "prompts/report.md", "Write the report.\n")
	if err := os.MkdirAll(filepath.Join(dir, "work", "inbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	sb.env["NOTES_API_KEY"] = "process-value-loses" // env_file comes first
	b, err := Load(path, environ(sb.env))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}

	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", what, got, want)
		}
	}
	check("File", b.File, path)
	check("Dir", b.Dir, dir)
	check("Version", b.Version, 1)
	check("Name", b.Name, "nightly")
	check("Schedule", b.Schedule, "0 2 * * *")
	check("Deadline", b.Deadline, &ClockTime{Hour: 7, Minute: 5})
	check("MaxParallel", b.MaxParallel, 3)
	check("MaxCostUSD", b.MaxCostUSD, 20.5)
	check("StateDir", b.StateDir, filepath.Join(sb.home, "state"))
	check("EnvFile", b.EnvFile, filepath.Join(dir, "config.env"))
	check("Env", b.Env, map[string]string{
		"NOTES_API_KEY": "nk-123",
		"NAME":          "night owl",
		"SEARCH_TOKEN":  "st-${literal}",
		"MODE":          "night owl-mode",
		"TOKEN":         "from-env", // env wins over env_file
		"LANG":          "C.UTF-8",
		"GREETING":      "hello night owl",
	})
	check("FailOpen", b.FailOpen, true)
	check("Agent", b.Agent, Agent{
		Command: filepath.Join(sb.bin, "claude"),
		Args:    []string{"--max-turns", "40", "--model", "sonnet"},
	})
	check("Defaults", b.Defaults, JobDefaults{Timeout: 30 * time.Minute, StallTimeout: 5 * time.Minute, Retries: 2, OnUnhealthy: Skip, MCPTimeout: 45 * time.Second, MaxDefer: 2 * time.Hour, SideEffects: Once})
	check("Health", b.Health, Health{TTL: time.Minute, Backoff: 10 * time.Second, MaxBackoff: 5 * time.Minute, ProbeTimeout: 3 * time.Second, PrewarmTimeout: 90 * time.Second,
		ReconnectTimeout: 20 * time.Second, FailureThreshold: 4, MaxHold: 2 * time.Minute})

	if len(b.Servers) != 3 {
		t.Fatalf("%d servers, want 3", len(b.Servers))
	}
	notes := b.Server("notes")
	check("notes.Line", notes.Line, 20)
	check("notes.RequiresEnv", notes.RequiresEnv, []string{"NOTES_API_KEY"})
	check("notes.Reconnect", notes.Reconnect, "pm2 restart notes")
	check("notes.MCP.Transport", notes.MCP.Transport, mcpconfig.Stdio)
	check("notes.MCP.Command", notes.MCP.Command, filepath.Join(sb.bin, "npx"))
	check("notes.MCP.Args", notes.MCP.Args, []string{"-y", "@acme/notes-mcp@1.2.3"})
	check("notes.MCP.Env", notes.MCP.Env, map[string]string{"NOTES_MODE": "night owl-mode", "NOTES_API_KEY": "nk-123"})
	check("notes.MCP.Source", notes.MCP.Source, path)
	check("notes Raw", rawOf(t, notes), map[string]any{
		"command":    filepath.Join(sb.bin, "npx"),
		"args":       []any{"-y", "@acme/notes-mcp@1.2.3"},
		"env":        map[string]any{"NOTES_MODE": "night owl-mode", "NOTES_API_KEY": "nk-123"},
		"alwaysLoad": true,
		"timeout":    float64(60000),
	})

	local := b.Server("local")
	check("local.MCP.Command", local.MCP.Command, filepath.Join(dir, "tools", "local-mcp"))
	check("local Raw", rawOf(t, local), map[string]any{"type": "stdio", "command": filepath.Join(dir, "tools", "local-mcp")})

	search := b.Server("search")
	check("search.MCP.Transport", search.MCP.Transport, mcpconfig.HTTP)
	check("search.MCP.URL", search.MCP.URL, "https://search.example/mcp")
	check("search.MCP.Headers", search.MCP.Headers, map[string]string{"Authorization": "Bearer st-${literal}"})
	check("search.MCP.Env", search.MCP.Env, map[string]string(nil)) // http: required env is checked, not injected
	check("search Raw", rawOf(t, search), map[string]any{
		"type":          "http",
		"url":           "https://search.example/mcp",
		"headers":       map[string]any{"Authorization": "Bearer st-${literal}"},
		"headersHelper": "/usr/local/bin/make-headers",
		"oauth":         map[string]any{"clientId": "id-night owl", "callbackPort": float64(8080)},
	})

	if len(b.Jobs) != 2 {
		t.Fatalf("%d jobs, want 2", len(b.Jobs))
	}
	check("job 0", *b.Jobs[0], Job{
		Name:         "summarize-inbox",
		Prompt:       "Summarize ${INBOX} literally", // prompts are not expanded
		Servers:      []string{"notes", "search"},
		Cwd:          filepath.Join(dir, "work", "inbox"),
		Timeout:      20 * time.Minute,
		StallTimeout: 5 * time.Minute,
		Retries:      0,
		OnUnhealthy:  Run,
		MCPTimeout:   2 * time.Minute,
		AllowedTools: []string{"mcp__notes__*", "Read"}, AllowedToolsSet: true,
		SideEffects: Once,
		Line:        39,
	})
	check("job 1", *b.Jobs[1], Job{
		Name:         "report.v2",
		Prompt:       "Write the report.\n",
		PromptFile:   filepath.Join(dir, "prompts", "report.md"),
		Servers:      []string{"local"},
		Cwd:          dir,
		Needs:        []string{"summarize-inbox"},
		Timeout:      30 * time.Minute,
		StallTimeout: 5 * time.Minute,
		Retries:      2,
		OnUnhealthy:  Skip,
		MCPTimeout:   45 * time.Second,
		SideEffects:  Once,
		Line:         48,
	})

	check("Job()", b.Job("report.v2"), b.Jobs[1])
	check("Job(missing)", b.Job("nope"), (*Job)(nil))
	check("ServersOf", b.ServersOf(b.Jobs[0]), []*Server{notes, search})
}

// rawOf decodes a server's Raw, the entry written into the session's MCP
// config, and checks nightwatch's own fields are not in it.
func rawOf(t *testing.T, s *Server) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(s.MCP.Raw, &m); err != nil {
		t.Fatalf("%s: Raw is not JSON: %v\n%s", s.Name, err, s.MCP.Raw)
	}
	for _, k := range []string{"requires_env", "reconnect"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s: Raw holds nightwatch's field %q", s.Name, k)
		}
	}
	return m
}

func TestLoadDefaults(t *testing.T) {
	sb := newSandbox(t)
	path := writeFile(t, sb.dir, "min.yaml", "version: 1\nname: min\njobs:\n  - {name: only, prompt: hi}\n")
	b, err := Load(path, environ(sb.env))
	if err != nil {
		t.Fatal(err)
	}
	if b.MaxParallel != 1 || b.StateDir != filepath.Join(sb.dir, ".nightwatch") || b.FailOpen ||
		b.Agent.Command != filepath.Join(sb.bin, "claude") || b.Deadline != nil || b.Env != nil {
		t.Errorf("batch defaults: %+v", b)
	}
	if b.Defaults != (JobDefaults{Timeout: 45 * time.Minute, StallTimeout: 10 * time.Minute, Retries: 1, OnUnhealthy: Defer, MCPTimeout: 30 * time.Second, MaxDefer: time.Hour, SideEffects: Once}) {
		t.Errorf("Defaults = %+v", b.Defaults)
	}
	if b.Health != DefaultHealth() {
		t.Errorf("Health = %+v", b.Health)
	}
	j := b.Jobs[0]
	if j.Cwd != sb.dir || j.Timeout != 45*time.Minute || j.StallTimeout != 10*time.Minute || j.MCPTimeout != 30*time.Second || j.Retries != 1 || j.OnUnhealthy != Defer || j.SideEffects != Once {
		t.Errorf("job defaults: %+v", j)
	}
	path = writeFile(t, sb.dir, "repeat.yaml", "version: 1\nname: repeat\ndefaults: {side_effects: allow-repeat}\n"+
		"jobs:\n  - {name: a, prompt: hi}\n  - {name: b, prompt: hi, side_effects: once}\n")
	if b, err = Load(path, environ(sb.env)); err != nil {
		t.Fatal(err)
	}
	if a, o := b.Jobs[0].SideEffects, b.Jobs[1].SideEffects; a != AllowRepeat || o != Once {
		t.Errorf("side_effects: a %q (the default allow-repeat), b %q (its own once)", a, o)
	}
	if j := b.Jobs[0]; j.MaxTurns != 0 || j.MaxCostUSD != 0 {
		t.Errorf("a job without a budget has max_turns %d, max_cost_usd %v", j.MaxTurns, j.MaxCostUSD)
	}
	path = writeFile(t, sb.dir, "budget.yaml", "version: 1\nname: budget\ndefaults: {max_turns: 40, max_cost_usd: 2.5}\n"+
		"jobs:\n  - {name: a, prompt: hi}\n  - {name: b, prompt: hi, max_turns: 5, max_cost_usd: 0.25}\n  - {name: c, prompt: hi, max_turns: 0}\n")
	if b, err = Load(path, environ(sb.env)); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		turns int
		cost  float64
	}{{40, 2.5}, {5, 0.25}, {0, 2.5}} {
		if j := b.Jobs[i]; j.MaxTurns != want.turns || j.MaxCostUSD != want.cost {
			t.Errorf("job %s: max_turns %d, max_cost_usd %v; want %d, %v", j.Name, j.MaxTurns, j.MaxCostUSD, want.turns, want.cost)
		}
	}
}

// TestLoadExample loads the quickstart's batch file with a fake claude.
func TestLoadExample(t *testing.T) {
	sb := newSandbox(t)
	b, err := Load("../examples/batches.yaml", environ(sb.env))
	if err != nil {
		t.Fatalf("examples/batches.yaml does not load:\n%v", err)
	}
	root, _ := filepath.Abs("..")
	if got, want := b.Server("notes").MCP.Command, filepath.Join(root, "bin", "notes"); got != want {
		t.Errorf("notes command = %q, want %q", got, want)
	}
	if got := b.Server("notes").MCP.Env["NOTES_API_KEY"]; got != "demo-notes-key" {
		t.Errorf("NOTES_API_KEY = %q", got)
	}
	if got := b.Server("search").MCP.URL; got != "http://127.0.0.1:18931/mcp" {
		t.Errorf("search url = %q", got)
	}
	if got := b.Server("search").MCP.Headers["Authorization"]; got != "Bearer demo-search-token" {
		t.Errorf("search auth = %q", got)
	}
	if b.StateDir != filepath.Join(root, ".nightwatch") || len(b.Jobs) != 4 {
		t.Errorf("state dir %q, %d jobs", b.StateDir, len(b.Jobs))
	}
	for _, j := range b.Jobs {
		if len(b.ServersOf(j)) == 0 {
			t.Errorf("job %s has no servers", j.Name)
		}
	}
}

// invalid is one broken batch file and the problem it must produce.
type invalid struct {
	name  string
	yaml  string
	files map[string]string // more files next to the batch file
	env   map[string]string // added to the sandbox's environment
	// The expected problem: in file (the batch file when ""), at line, on
	// field, with msg in its message.
	file  string
	line  int
	field string
	msg   string
}

const head = "version: 1\nname: n\n" // lines 1-2 of most cases

const oneJob = "jobs:\n  - {name: a, prompt: hi}\n"

var invalidCases = []invalid{
	{name: "max_turns not a number", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    max_turns: forty\n",
		line: 6, field: "jobs[0].max_turns", msg: "must be a whole number"},
	{name: "max_turns negative", yaml: head + "defaults: {max_turns: -1}\n" + oneJob,
		line: 3, field: "defaults.max_turns", msg: "must be 0 or more"},
	{name: "max_turns a typo", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    max_turns: 400000\n",
		line: 6, field: "jobs[0].max_turns", msg: "must be at most 10000"},
	{name: "job max_cost_usd not an amount", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    max_cost_usd: $2\n",
		line: 6, field: "jobs[0].max_cost_usd", msg: "must be an amount in dollars"},
	{name: "defaults max_cost_usd negative", yaml: head + "defaults:\n  max_cost_usd: -2\n" + oneJob,
		line: 4, field: "defaults.max_cost_usd", msg: "must be 0 (no limit) or more"},
	{name: "max_turn misspelled", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    max_turn: 4\n",
		line: 6, field: "jobs[0].max_turn", msg: "unknown field"},
	{name: "allowed_tools typo of a server", yaml: head + "servers:\n  files: {command: npx}\njobs:\n  - name: a\n    prompt: hi\n    servers: [files]\n    allowed_tools: [\"mcp__file__*\"]\n",
		line: 9, field: "jobs[0].allowed_tools[0]", msg: `"mcp__file__*" matches no tool of the job's servers (the job's servers are files)`},
	{name: "allowed_tools of an undeclared server", yaml: head + "servers:\n  files: {command: npx}\n  web: {command: npx}\njobs:\n  - name: a\n    prompt: hi\n    servers: [files]\n    allowed_tools: [mcp__files, mcp__web__echo]\n",
		line: 10, field: "jobs[0].allowed_tools[1]", msg: `"mcp__web__echo" matches no tool`},
	{name: "verify empty", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    verify: []\n",
		line: 6, field: "jobs[0].verify", msg: "want the program"},
	{name: "verify unknown key", yaml: head + "defaults:\n  verify: {command: [claude], timout: 1m}\n" + oneJob,
		line: 4, field: "defaults.verify.timout", msg: "unknown field"},
	{name: "verify program not found", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    verify: {command: [no-such-checker, x]}\n",
		line: 6, field: "jobs[0].verify.command[0]", msg: "not found in PATH"},
	{name: "verify a string", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    verify: go test\n",
		line: 6, field: "jobs[0].verify", msg: "must be a command list"},
	{name: "mcp_timeout without a unit", yaml: head + "defaults: {mcp_timeout: 30}\n" + oneJob,
		line: 3, field: "defaults.mcp_timeout", msg: "needs a unit"},
	{name: "job mcp_timeout zero", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    mcp_timeout: 0s\n",
		line: 6, field: "jobs[0].mcp_timeout", msg: "must be between"},
	{name: "notify webhook not a URL", yaml: head + "notify: {webhook: slack}\n" + oneJob,
		line: 3, field: "notify.webhook", msg: "want an http(s) URL"},
	{name: "notify command empty", yaml: head + "notify:\n  command: []\n" + oneJob,
		line: 4, field: "notify.command", msg: "want the program"},
	{name: "unknown top-level key", yaml: head + "colour: red\n" + oneJob,
		line: 3, field: "colour", msg: "unknown field"},
	{name: "unknown job key", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    promt: hi\n",
		line: 6, field: "jobs[0].promt", msg: "unknown field"},
	{name: "unknown server field", yaml: head + "servers:\n  s:\n    command: npx\n    alwaysload: true\n" + oneJob,
		line: 6, field: "servers.s.alwaysload", msg: "unknown field"},
	{name: "unknown server in a job", yaml: head + "servers:\n  notes: {command: npx}\n  search: {command: npx}\njobs:\n  - name: a\n    prompt: hi\n    servers: [notes, serch]\n",
		line: 9, field: "jobs[0].servers", msg: `unknown server "serch" (did you mean "search"?) (defined: notes, search)`},
	{name: "needs cycle", yaml: head + "jobs:\n  - {name: a, prompt: hi, needs: [b]}\n  - {name: b, prompt: hi, needs: [a]}\n",
		line: 5, field: "jobs[1].needs", msg: "needs cycle: a → b → a"},
	{name: "needs itself", yaml: head + "jobs:\n  - {name: a, prompt: hi}\n  - {name: b, prompt: hi, needs: [b]}\n",
		line: 5, field: "jobs[1].needs", msg: "needs cycle: b → b"},
	{name: "unknown needs", yaml: head + "jobs:\n  - {name: a, prompt: hi, needs: [nope]}\n",
		line: 4, field: "jobs[0].needs", msg: `unknown job "nope"`},
	{name: "duplicate job name", yaml: head + "jobs:\n  - {name: a, prompt: hi}\n  - {name: a, prompt: hi}\n",
		line: 5, field: "jobs[1].name", msg: "defined twice (first at line 4)"},
	{name: "bad job name", yaml: head + "jobs:\n  - {name: ../a, prompt: hi}\n",
		line: 4, field: "jobs[0].name", msg: "used in file names"},
	{name: "tilde left in a path", yaml: head + "state_dir: /Users/~/x\n" + oneJob,
		line: 3, field: "state_dir", msg: "contains a ~"},
	{name: "missing required env", yaml: head + "servers:\n  s:\n    command: npx\n    requires_env: [API_KEY]\n" + oneJob,
		line: 6, field: "servers.s.requires_env", msg: "required variable API_KEY is not set"},
	{name: "required env set but empty", yaml: head + "servers:\n  s:\n    command: npx\n    requires_env: [API_KEY]\n" + oneJob,
		env: map[string]string{"API_KEY": ""}, line: 6, field: "servers.s.requires_env", msg: "API_KEY is not set"},
	{name: "unset variable", yaml: head + "servers:\n  s:\n    type: http\n    url: https://x/mcp\n    headers: {Authorization: \"Bearer ${TOKEN}\"}\n" + oneJob,
		line: 7, field: "servers.s.headers.Authorization", msg: "variable ${TOKEN} is not set and has no default"},
	{name: "unset variable in agent args", yaml: head + "agent: {args: [\"${ARGS}\"]}\n" + oneJob,
		line: 3, field: "agent.args[0]", msg: "${ARGS}"},
	{name: "bad duration", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    timeout: 45 minutes\n",
		line: 6, field: "jobs[0].timeout", msg: `"45 minutes" is not a duration`},
	{name: "duration without unit", yaml: head + "defaults: {timeout: 45}\n" + oneJob,
		line: 3, field: "defaults.timeout", msg: "needs a unit"},
	{name: "negative retries", yaml: head + "defaults:\n  retries: -1\n" + oneJob,
		line: 4, field: "defaults.retries", msg: "must be 0 or more"},
	{name: "max_parallel below 1", yaml: head + "max_parallel: 0\n" + oneJob,
		line: 3, field: "max_parallel", msg: "must be 1 or more"},
	{name: "failure_threshold zero", yaml: head + "health: {failure_threshold: 0}\n" + oneJob,
		line: 3, field: "health.failure_threshold", msg: "must be 1 or more"},
	{name: "failure_threshold too large", yaml: head + "health: {failure_threshold: 5000}\n" + oneJob,
		line: 3, field: "health.failure_threshold", msg: "1000 or less"},
	{name: "reconnect_timeout not a duration", yaml: head + "health: {reconnect_timeout: soon}\n" + oneJob,
		line: 3, field: "health.reconnect_timeout", msg: ""},
	{name: "unknown side_effects", yaml: head + "jobs:\n  - {name: a, prompt: hi, side_effects: twice}\n",
		line: 4, field: "jobs[0].side_effects", msg: "not one of once, allow-repeat"},
	{name: "unknown defaults.side_effects", yaml: head + "defaults: {side_effects: never}\n" + oneJob,
		line: 3, field: "defaults.side_effects", msg: "not one of once, allow-repeat"},
	{name: "unknown on_unhealthy", yaml: head + "jobs:\n  - {name: a, prompt: hi, on_unhealthy: retry}\n",
		line: 4, field: "jobs[0].on_unhealthy", msg: "not one of defer, skip, run"},
	{name: "string where a list is expected", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    allowed_tools: Read\n",
		line: 6, field: "jobs[0].allowed_tools", msg: "must be a list"},
	{name: "allowed tool that is a flag", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    allowed_tools:\n      - Read\n      - --dangerously-skip-permissions\n",
		line: 8, field: "jobs[0].allowed_tools[1]", msg: "not a tool rule"},
	{name: "bad schedule", yaml: head + "schedule: \"0 2 * *\"\n" + oneJob,
		line: 3, field: "schedule", msg: "not a cron schedule"},
	{name: "schedule that panics cron", yaml: head + "schedule: \"TZ=UTC\"\n" + oneJob,
		line: 3, field: "schedule", msg: "not a cron schedule"},
	{name: "bad deadline", yaml: head + "deadline: \"25:00\"\n" + oneJob,
		line: 3, field: "deadline", msg: "not a time of day"},
	{name: "prompt and prompt_file", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    prompt_file: p.md\n",
		files: map[string]string{"p.md": "hi"}, line: 6, field: "jobs[0]", msg: "both prompt (line 5) and prompt_file"},
	{name: "neither prompt nor prompt_file", yaml: head + "jobs:\n  - name: a\n",
		line: 4, field: "jobs[0]", msg: "needs a prompt or a prompt_file"},
	{name: "prompt_file missing", yaml: head + "jobs:\n  - name: a\n    prompt_file: prompts/gone.md\n",
		line: 5, field: "jobs[0].prompt_file", msg: "no such file"},
	{name: "env_file missing", yaml: head + "env_file: ./gone.env\n" + oneJob,
		line: 3, field: "env_file", msg: "no such file"},
	{name: "env_file syntax error", yaml: head + "env_file: ./config.env\n" + oneJob,
		files: map[string]string{"config.env": "# ok\nA=1\nnot a pair\n"},
		line:  3, field: "", msg: "expected KEY=VALUE", file: "config.env"},
	{name: "env_file unterminated quote", yaml: head + "env_file: config.env\n" + oneJob,
		files: map[string]string{"config.env": "A='x\n"},
		line:  1, field: "", msg: "A: unterminated single quote", file: "config.env"},
	{name: "agent command not found", yaml: head + "agent:\n  command: claude-nope\n" + oneJob,
		line: 4, field: "agent.command", msg: `"claude-nope" not found in PATH`},
	{name: "agent path not executable", yaml: head + "agent: {command: ./agent.sh}\n" + oneJob,
		files: map[string]string{"agent.sh": "#!/bin/sh\n"}, line: 3, field: "agent.command", msg: "not an executable file"},
	{name: "server command not found", yaml: head + "servers:\n  s: {command: uvx}\n" + oneJob,
		line: 4, field: "servers.s.command", msg: `"uvx" not found in PATH`},
	{name: "url without type", yaml: head + "servers:\n  s: {url: \"https://x/mcp\"}\n" + oneJob,
		line: 4, field: "servers.s", msg: "Claude Code would drop this server"},
	{name: "env on an http server", yaml: head + "servers:\n  s:\n    type: http\n    url: https://x/mcp\n    env: {A: b}\n" + oneJob,
		line: 7, field: "servers.s.env", msg: "not used by a http server"},
	{name: "server timeout under 1000", yaml: head + "servers:\n  s: {command: npx, timeout: 30}\n" + oneJob,
		line: 4, field: "servers.s.timeout", msg: "must be 1000 or more"},
	{name: "duplicate key", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n    prompt: again\n",
		line: 6, field: "jobs[0].prompt", msg: "defined twice (first at line 5)"},
	{name: "version 2", yaml: "version: 2\nname: n\n" + oneJob,
		line: 1, field: "version", msg: "version 2 is not supported"},
	{name: "version missing", yaml: "name: n\n" + oneJob,
		line: 1, field: "version", msg: "is required"},
	{name: "name missing", yaml: "version: 1\n" + oneJob,
		line: 1, field: "name", msg: "is required"},
	{name: "no jobs", yaml: head,
		line: 1, field: "jobs", msg: "no jobs"},
	{name: "non-YAML garbage", yaml: "version: 1\nname: n\n  jobs: }{ :: x\n",
		line: 3, field: "", msg: "invalid YAML: mapping values are not allowed"},
	// The line a person must fix, not the one where the parser's block began.
	{name: "a tab in the indentation", yaml: head + "jobs:\n  - name: a\n\tprompt: hi\n",
		line: 5, field: "", msg: "this line is indented with a tab; YAML indents with spaces only"},
	{name: "a line that lines up with nothing", yaml: head + "jobs:\n  - name: a\n    prompt: hi\n   servers: [x]\n",
		line: 6, field: "", msg: "this line is indented by 3 spaces, which lines up with no line above it"},
	{name: "a schedule out of range says what to write", yaml: head + "schedule: \"0 25 * * *\"\n" + oneJob,
		line: 3, field: "schedule", msg: `hour (0-23)`},
	{name: "a typo'd field gets a suggestion", yaml: head + "jobs:\n  - name: a\n    promt: hi\n",
		line: 5, field: "jobs[0].promt", msg: `unknown field (did you mean "prompt"?)`},
	{name: "a typo'd server type gets a suggestion", yaml: head + "servers:\n  s: {type: htp, url: \"http://x\"}\n" + oneJob,
		line: 4, field: "servers.s", msg: `Claude Code would drop this server: unknown type "htp" (did you mean "http"?)`},
	{name: "a typo'd need gets a suggestion", yaml: head + "jobs:\n  - {name: build, prompt: hi}\n  - {name: b, prompt: hi, needs: [biuld]}\n",
		line: 5, field: "jobs[1].needs", msg: `unknown job "biuld" (did you mean "build"?)`},
	{name: "binary garbage", yaml: "\x7fELF\x02\x01\x01\x00\x00",
		line: 0, field: "", msg: "invalid YAML"},
	{name: "top level is a list", yaml: "- a\n- b\n",
		line: 1, field: "", msg: "top level must be a mapping"},
	{name: "empty file", yaml: "",
		line: 0, field: "", msg: "the file is empty"},
	{name: "only comments", yaml: "# nothing yet\n",
		line: 0, field: "", msg: "the file is empty"},
	{name: "two documents", yaml: head + oneJob + "---\nversion: 1\n",
		line: 5, field: "", msg: "one YAML document"},
}

func TestLoadInvalid(t *testing.T) {
	for _, tc := range invalidCases {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			path := writeFile(t, sb.dir, "nightly.yaml", tc.yaml)
			for name, content := range tc.files {
				writeFile(t, sb.dir, name, content)
			}
			for k, v := range tc.env {
				sb.env[k] = v
			}
			b, err := Load(path, environ(sb.env))
			if err == nil {
				t.Fatalf("Load succeeded: %+v", b)
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error is %T, not *LoadError: %v", err, err)
			}
			file := path
			if tc.file != "" {
				file = filepath.Join(sb.dir, tc.file)
			}
			want := Problem{File: file, Line: tc.line, Field: tc.field}
			for _, p := range le.Problems {
				if p.File == want.File && p.Line == want.Line && p.Field == want.Field && strings.Contains(p.Message, tc.msg) {
					// The text is what a user sees: file:line: field: message.
					prefix := want.Error() // "file:line: field: " with an empty message
					if !strings.Contains(err.Error(), prefix) {
						t.Errorf("error text lacks %q:\n%v", prefix, err)
					}
					return
				}
			}
			t.Errorf("no problem at %s:%d field %q with %q; got:\n%v", file, tc.line, tc.field, tc.msg, err)
		})
	}
}

func TestLoadCollectsEveryProblem(t *testing.T) {
	sb := newSandbox(t)
	path := writeFile(t, sb.dir, "nightly.yaml", `version: 1
name: n
max_parallel: 0
servers:
  s: {command: npx}
jobs:
  - name: a
    prompt: hi
    servers: [s, t]
    timeout: soon
  - name: b
    prompt: hi
    needs: [c]
    colour: blue
`)
	_, err := Load(path, environ(sb.env))
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v", err)
	}
	want := []struct {
		line  int
		field string
	}{
		{3, "max_parallel"},
		{9, "jobs[0].servers"},
		{10, "jobs[0].timeout"},
		{13, "jobs[1].needs"},
		{14, "jobs[1].colour"},
	}
	if len(le.Problems) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(le.Problems), len(want), err)
	}
	for i, w := range want {
		if p := le.Problems[i]; p.Line != w.line || p.Field != w.field {
			t.Errorf("problem %d = line %d %q, want line %d %q", i, p.Line, p.Field, w.line, w.field)
		}
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != len(want) {
		t.Errorf("Error() has %d lines, want %d:\n%v", len(lines), len(want), err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "none.yaml"), nil)
	if err == nil || !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v", err)
	}
}

// TestLoadAliases: anchors, aliases and merge keys are YAML users reach for
// to share settings between jobs.
func TestLoadAliases(t *testing.T) {
	sb := newSandbox(t)
	path := writeFile(t, sb.dir, "nightly.yaml", `version: 1
name: n
servers:
  s: {command: npx}
x-common: &common {servers: [s], timeout: 5m}
jobs:
  - {<<: *common, name: a, prompt: hi}
  - {<<: *common, name: b, prompt: hi, timeout: 7m}
`)
	_, err := Load(path, environ(sb.env))
	// x-common is an unknown top-level key: strict, even for anchors.
	var le *LoadError
	if !errors.As(err, &le) || len(le.Problems) != 1 || le.Problems[0].Field != "x-common" {
		t.Fatalf("err = %v", err)
	}

	path = writeFile(t, sb.dir, "nightly.yaml", `version: 1
name: n
servers:
  s: {command: npx}
defaults: &common {timeout: 5m}
jobs:
  - {<<: *common, name: a, prompt: hi, servers: [s]}
  - {<<: *common, name: b, prompt: hi, timeout: 7m}
`)
	b, err := Load(path, environ(sb.env))
	if err != nil {
		t.Fatal(err)
	}
	if b.Jobs[0].Timeout != 5*time.Minute || b.Jobs[1].Timeout != 7*time.Minute {
		t.Errorf("timeouts %v %v", b.Jobs[0].Timeout, b.Jobs[1].Timeout)
	}
}

func TestParseDotenv(t *testing.T) {
	env := environ(map[string]string{"HOME": "/home/u"})
	tests := []struct {
		in   string
		want map[string]string
		errs []int // lines with a syntax error
	}{
		{in: "A=1\n# c\n\nexport B=two words  # comment\n", want: map[string]string{"A": "1", "B": "two words"}},
		{in: "A='${HOME} #x'\nB=\"${HOME}\\t\\\"q\\\"\" # c\nC=${A}/${HOME}\n", want: map[string]string{"A": "${HOME} #x", "B": "/home/u\t\"q\"", "C": "${HOME} #x//home/u"}},
		{in: "A=\r\nB= spaced \r\n", want: map[string]string{"A": "", "B": "spaced"}},
		{in: "\ufeffA=1\n", want: map[string]string{"A": "1"}},
		{in: "A=${NOPE}\n", errs: []int{1}},
		{in: "1A=x\nexport\nB=\"open\nC='x' y\n", errs: []int{1, 2, 3, 4}},
	}
	for _, tc := range tests {
		vars, errs := parseDotenv(tc.in, env)
		got := map[string]string{}
		for _, v := range vars {
			got[v.key] = v.value
		}
		var lines []int
		for _, e := range errs {
			lines = append(lines, e.line)
		}
		if len(tc.errs) == 0 && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %v, want %v", tc.in, got, tc.want)
		}
		if !reflect.DeepEqual(lines, tc.errs) {
			t.Errorf("%q: errors on lines %v, want %v (%v)", tc.in, lines, tc.errs, errs)
		}
	}
}

// TestLoadTestdata: the seeds of FuzzLoad that are meant to load do, and
// the hostile ones end as messages, fast.
func TestLoadTestdata(t *testing.T) {
	sb := newSandbox(t)
	tests := []struct {
		file string
		msg  string // "" = loads
	}{
		{"minimal.yaml", ""},
		{"anchors.yaml", ""},
		{"alias-bomb.yaml", "more than"},
		{"recursive.yaml", "needs"},
	}
	for _, tc := range tests {
		// "Fast" is measured in work, not time: an alias bomb expanded
		// allocates gigabytes; refused, a few kilobytes.
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b, err := Load(filepath.Join("testdata", tc.file), environ(sb.env))
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("%s: Load allocated %d MiB", tc.file, alloc>>20)
		}
		switch {
		case tc.msg == "" && err != nil:
			t.Errorf("%s: %v", tc.file, err)
		case tc.msg == "" && tc.file == "anchors.yaml":
			if j := b.Job("b"); j == nil || j.Timeout != 5*time.Minute || j.Prompt != "hi" || len(j.Servers) != 1 {
				t.Errorf("anchors: job b = %+v", j)
			}
			if s := b.Server("notes2"); s == nil || s.MCP.Args[1] != "notes2" || s.MCP.Env["K"] != "v" {
				t.Errorf("anchors: notes2 = %+v", s)
			}
		case tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)):
			t.Errorf("%s: err = %v, want %q", tc.file, err, tc.msg)
		}
	}
}

func TestAllowedTools(t *testing.T) {
	sb := newSandbox(t)
	path := writeFile(t, sb.dir, "n.yaml", head+`servers:
  files: {command: npx}
  web: {command: npx}
defaults: {verify: [claude, --check]}
jobs:
  - {name: both, prompt: hi, servers: [files, web]}
  - {name: own, prompt: hi, servers: [files, web], allowed_tools: ["mcp__files__read*", "mcp__w*", Read], verify: {command: [npx, ok], timeout: 1m}}
  - {name: none, prompt: hi, servers: [files], allowed_tools: [], verify: ~}
`)
	b, err := Load(path, environ(sb.env))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		job  string
		want []string
	}{
		{"both", []string{"mcp__files", "mcp__web"}},
		{"own", []string{"mcp__files__read*", "mcp__w*", "Read"}},
		{"none", []string{}},
	} {
		if got := b.Job(tc.job).Allowed(); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: Allowed() = %q, want %q", tc.job, got, tc.want)
		}
	}
	if v := b.Job("both").Verify; v == nil || v.Command[0] != filepath.Join(sb.bin, "claude") || v.Command[1] != "--check" || v.Timeout != DefaultVerifyTimeout {
		t.Errorf("both: the default verify: %+v", v)
	}
	if v := b.Job("own").Verify; v == nil || v.Timeout != time.Minute || v.Command[1] != "ok" {
		t.Errorf("own: its verify: %+v", v)
	}
	if v := b.Job("none").Verify; v != nil {
		t.Errorf("none: verify ~ should turn the default off: %+v", v)
	}
	for tool, want := range map[string]string{"mcp__web__echo": "web", "mcp__web": "web", "Read": "", "mcp__a_b__c__d": "a_b"} {
		if got := ToolServer(tool); got != want {
			t.Errorf("ToolServer(%q) = %q, want %q", tool, got, want)
		}
	}
}

// A command that only reads the night's files loads a batch whose
// variables live in the night's own environment; state_dir, which says
// where those files are, must still resolve.
func TestLoadForReading(t *testing.T) {
	sb := newSandbox(t)
	batch := `version: 1
name: nightly
state_dir: ${STATE:-./state}
env:
  ANTHROPIC_BASE_URL: ${API_URL}
agent:
  command: ${CLAUDE_BIN}
servers:
  s:
    type: http
    url: http://127.0.0.1:1/mcp
    headers:
      Authorization: Bearer ${TOKEN}
jobs:
  - name: a
    prompt: do it
    servers: [s]
`
	path := writeFile(t, sb.dir, "night.yaml", batch)
	if _, err := Load(path, environ(sb.env)); err == nil || !strings.Contains(err.Error(), "${TOKEN} is not set") {
		t.Fatalf("Load: err = %v, want the unset variables as problems", err)
	}
	b, err := LoadWith(path, environ(sb.env), LoadOptions{Reading: true})
	if err != nil {
		t.Fatalf("LoadWith(Reading): %v", err)
	}
	if want := filepath.Join(sb.dir, "state"); b.StateDir != want {
		t.Errorf("state_dir = %q, want %q", b.StateDir, want)
	}
	cautions := strings.Join(b.Cautions, "\n")
	for _, v := range []string{"${API_URL}", "${CLAUDE_BIN}", "${TOKEN}"} {
		if !strings.Contains(cautions, v) {
			t.Errorf("cautions do not name %s:\n%s", v, cautions)
		}
	}

	unsetState := writeFile(t, sb.dir, "state.yaml", strings.Replace(batch, "${STATE:-./state}", "${STATE}", 1))
	if _, err := LoadWith(unsetState, environ(sb.env), LoadOptions{Reading: true}); err == nil || !strings.Contains(err.Error(), "state_dir") {
		t.Errorf("an unset state_dir: err = %v, want a problem naming state_dir", err)
	}
}
