package testkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

// DefaultClaudeTimeout bounds a RunClaude whose Timeout is zero. A scripted
// session normally takes 1–3 s.
const DefaultClaudeTimeout = 120 * time.Second

// DefaultMCPConnectTimeoutMS is how long RunClaude lets the CLI wait for the
// MCP servers before the first turn (MCP_CONNECT_TIMEOUT_MS; the CLI's own
// default is 5000). On a loaded machine a Node server was seen to take 9.6 s
// to connect: with 5 s it was "pending" in init and its tools were missing.
// A test of a server that never finishes its handshake should set a lower
// MCP_CONNECT_TIMEOUT_MS (or MCP_TIMEOUT, the per-server limit, 30 s) in
// ClaudeRun.Env.
const DefaultMCPConnectTimeoutMS = 30000

// ClaudeRun describes one headless `claude -p` session.
type ClaudeRun struct {
	Version      string        // pinned Claude Code version to run; "" = the oldest (see ForEachClaude)
	Prompt       string        // the script for the fake model (see package fakeapi)
	Dir          string        // working directory; a fresh temp dir if empty
	Home         string        // throw-away HOME; a fresh temp dir if empty
	MCPConfig    string        // --mcp-config file; with --strict-mcp-config. "" = no MCP servers at all
	Settings     string        // --settings file (or inline JSON); "" = none
	AllowedTools []string      // --allowedTools
	Env          []string      // extra KEY=VALUE, applied last (they override the defaults)
	Timeout      time.Duration // whole session; DefaultClaudeTimeout if zero
	ExtraArgs    []string      // more CLI flags, placed before --allowedTools
	// NoDebugFile turns off --debug-file. By default the CLI's debug log is
	// written to a temp file, returned in ClaudeResult.DebugLog and shown in
	// the failure dump: it is the only place that says why an MCP server
	// failed to connect.
	NoDebugFile bool
}

// ClaudeResult is what a session produced.
type ClaudeResult struct {
	Args       []string         // argv after the binary
	ExitCode   int              // -1 if killed by a signal
	TimedOut   bool             // the session hit its Timeout and was killed
	Duration   time.Duration    // wall time of the claude process
	Stream     []map[string]any // parsed stream-json lines, in order
	Stdout     string
	Stderr     string
	DebugLog   string           // the --debug-file contents ("" with NoDebugFile)
	Init       map[string]any   // the system/init event (nil if none)
	Result     map[string]any   // the result event (nil if none)
	HookEvents []map[string]any // system events with subtype hook_* (--include-hook-events)
}

// RunClaude runs the pinned Claude Code CLI headless against api and waits
// for it. It runs
//
//	claude -p <prompt> --output-format stream-json --verbose --include-hook-events
//	  [--debug-file <tmp>] --strict-mcp-config [--mcp-config <f>] [--settings <f>]
//	  [ExtraArgs…] [--allowedTools <t>…]
//
// in its own process group (the whole group is killed at the end or on
// timeout), with a minimal explicit environment: PATH, HOME, TMPDIR (if
// set), ANTHROPIC_BASE_URL=api.URL(), ANTHROPIC_API_KEY=test-key,
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, MCP_CONNECTION_NONBLOCKING=0
// and MCP_CONNECT_TIMEOUT_MS=DefaultMCPConnectTimeoutMS (the first turn waits
// until every MCP server is connected or has failed, or that long), then
// r.Env, whose entries win.
//
// A non-zero exit is not a test failure by itself (see RequireSuccess); a
// timeout is. If the test fails, a dump of the session (exit, stderr tail,
// last stream lines, debug log tail) is logged at cleanup.
func RunClaude(t testing.TB, api *fakeapi.Server, r ClaudeRun) ClaudeResult {
	t.Helper()
	if strings.HasPrefix(r.Prompt, "-") {
		t.Fatalf("testkit: a prompt starting with '-' would be read as a flag: %q", r.Prompt)
	}
	bin := ClaudeBinOf(t, r.Version)
	if r.Dir == "" {
		r.Dir = t.TempDir()
	}
	if r.Home == "" {
		r.Home = t.TempDir()
	} else if err := os.MkdirAll(r.Home, 0o755); err != nil {
		t.Fatalf("testkit: create HOME: %v", err)
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultClaudeTimeout
	}

	args := []string{"-p", r.Prompt, "--output-format", "stream-json", "--verbose", "--include-hook-events"}
	debugFile := ""
	if !r.NoDebugFile {
		debugFile = filepath.Join(t.TempDir(), "claude-debug.log")
		args = append(args, "--debug-file", debugFile)
	}
	args = append(args, "--strict-mcp-config")
	if r.MCPConfig != "" {
		args = append(args, "--mcp-config", r.MCPConfig)
	}
	if r.Settings != "" {
		args = append(args, "--settings", r.Settings)
	}
	args = append(args, r.ExtraArgs...)
	// Last: --allowedTools is variadic and would swallow a positional.
	if len(r.AllowedTools) > 0 {
		args = append(args, "--allowedTools")
		args = append(args, r.AllowedTools...)
	}

	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := []string{
		"PATH=" + path,
		"HOME=" + r.Home,
		"ANTHROPIC_BASE_URL=" + api.URL(),
		"ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"MCP_CONNECTION_NONBLOCKING=0",
		"MCP_CONNECT_TIMEOUT_MS=" + strconv.Itoa(DefaultMCPConnectTimeoutMS),
	}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	env = append(env, r.Env...)

	ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = r.Dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	proc.Prepare(cmd, 5*time.Second)

	res := ClaudeResult{Args: args}
	start := time.Now()
	if err := proc.Start(cmd); err != nil {
		t.Fatalf("testkit: start %s: %v", bin, err)
	}
	_ = proc.Wait(cmd)
	res.Duration = time.Since(start)
	res.TimedOut = ctx.Err() != nil
	res.ExitCode = cmd.ProcessState.ExitCode()
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	if debugFile != "" {
		if b, err := os.ReadFile(debugFile); err == nil {
			res.DebugLog = string(b)
		}
	}
	res.parseStream()

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testkit: claude session dump:\n%s", res.Dump())
		}
	})
	if res.TimedOut {
		t.Errorf("testkit: claude did not finish within %s (killed)", r.Timeout)
	}
	return res
}

func (r *ClaudeResult) parseStream() {
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] != '{' {
			continue
		}
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		r.Stream = append(r.Stream, ev)
		typ, _ := ev["type"].(string)
		sub, _ := ev["subtype"].(string)
		switch {
		case typ == "system" && sub == "init" && r.Init == nil:
			r.Init = ev
		case typ == "result":
			r.Result = ev
		case typ == "system" && strings.HasPrefix(sub, "hook_"):
			r.HookEvents = append(r.HookEvents, ev)
		}
	}
}

// MCPServerStatus is the status init reported for the named MCP server
// ("connected", "failed", "pending", "needs-auth"), "" if it is not listed.
func (r ClaudeResult) MCPServerStatus(name string) string {
	list, _ := r.Init["mcp_servers"].([]any)
	for _, s := range list {
		m, _ := s.(map[string]any)
		if m["name"] == name {
			st, _ := m["status"].(string)
			return st
		}
	}
	return ""
}

// Tools is the tool list init reported (MCP tools as mcp__<server>__<tool>).
func (r ClaudeResult) Tools() []string {
	var out []string
	list, _ := r.Init["tools"].([]any)
	for _, s := range list {
		if name, ok := s.(string); ok {
			out = append(out, name)
		}
	}
	return out
}

// ResultText is the result event's final text.
func (r ClaudeResult) ResultText() string { s, _ := r.Result["result"].(string); return s }

// Subtype is the result event's subtype ("success", "error_max_turns", …).
func (r ClaudeResult) Subtype() string { s, _ := r.Result["subtype"].(string); return s }

// IsError is the result event's is_error.
func (r ClaudeResult) IsError() bool { b, _ := r.Result["is_error"].(bool); return b }

// TerminalReason is the result event's terminal_reason ("completed", …).
func (r ClaudeResult) TerminalReason() string {
	s, _ := r.Result["terminal_reason"].(string)
	return s
}

// PermissionDenials is the result event's permission_denials list.
func (r ClaudeResult) PermissionDenials() []map[string]any {
	var out []map[string]any
	list, _ := r.Result["permission_denials"].([]any)
	for _, d := range list {
		if m, ok := d.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// HookResponses returns the hook_response events of the given hook event
// ("PreToolUse", "PostToolUseFailure", …; "" for all).
func (r ClaudeResult) HookResponses(event string) []map[string]any {
	var out []map[string]any
	for _, ev := range r.HookEvents {
		if ev["subtype"] != "hook_response" {
			continue
		}
		if event == "" || ev["hook_event"] == event {
			out = append(out, ev)
		}
	}
	return out
}

// RequireSuccess fails the test now unless the session exited 0 with a
// result of subtype "success" and is_error false.
func (r ClaudeResult) RequireSuccess(t testing.TB) {
	t.Helper()
	if r.ExitCode != 0 || r.Result == nil || r.Subtype() != "success" || r.IsError() {
		t.Fatalf("testkit: claude session did not succeed: exit %d, subtype %q, is_error %v, result %q",
			r.ExitCode, r.Subtype(), r.IsError(), r.ResultText())
	}
}

// Dump describes the session for a failure message.
func (r ClaudeResult) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "argv: claude %s\n", quoteArgs(r.Args))
	fmt.Fprintf(&b, "exit %d, timed out %v, took %s\n", r.ExitCode, r.TimedOut, r.Duration.Round(time.Millisecond))
	fmt.Fprintf(&b, "--- stderr (tail) ---\n%s\n", lastLines([]byte(r.Stderr), 30))
	fmt.Fprintf(&b, "--- stream-json (last %d of %d lines) ---\n", min(15, len(r.Stream)), len(r.Stream))
	for _, ev := range r.Stream[max(0, len(r.Stream)-15):] {
		line, _ := json.Marshal(ev)
		if len(line) > 1500 {
			line = append(line[:1500], "…"...)
		}
		fmt.Fprintf(&b, "%s\n", line)
	}
	if len(r.Stream) == 0 && r.Stdout != "" {
		fmt.Fprintf(&b, "(unparsed stdout tail)\n%s\n", lastLines([]byte(r.Stdout), 20))
	}
	if r.DebugLog != "" {
		fmt.Fprintf(&b, "--- debug log (errors, MCP, hooks, API; tail) ---\n%s\n",
			lastLines([]byte(debugHighlights(r.DebugLog)), 50))
	}
	return b.String()
}

// debugHighlights keeps the debug-log lines that explain a failure: errors
// and warnings, MCP connection and tool-call lines, hook lines and API
// request lines (not the config-file write noise).
func debugHighlights(log string) string {
	var keep []string
	for _, line := range strings.Split(log, "\n") {
		for _, mark := range []string{"[ERROR]", "[WARN]", "MCP", "Hook", "hook", "[API", "[Stall]"} {
			if strings.Contains(line, mark) {
				keep = append(keep, line)
				break
			}
		}
	}
	return strings.Join(keep, "\n")
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`{}[]*?") {
			q[i] = fmt.Sprintf("%q", a)
		} else {
			q[i] = a
		}
	}
	return strings.Join(q, " ")
}

// WriteMCPConfig writes {"mcpServers": servers} to a temp file and returns
// its absolute path, for ClaudeRun.MCPConfig.
func WriteMCPConfig(t testing.TB, servers map[string]any) string {
	t.Helper()
	return writeTempJSON(t, "mcp-config.json", map[string]any{"mcpServers": servers})
}

// WriteSettings writes a Claude Code settings object to a temp file and
// returns its absolute path, for ClaudeRun.Settings.
func WriteSettings(t testing.TB, settings any) string {
	t.Helper()
	return writeTempJSON(t, "settings.json", settings)
}

// EverythingStdio is an MCP config entry that runs the reference server
// (server-everything) over stdio; its tools include echo {"message": …}.
func EverythingStdio(t testing.TB) map[string]any {
	t.Helper()
	return map[string]any{"command": ServerEverythingBin(t), "args": []string{"stdio"}}
}

func writeTempJSON(t testing.TB, name string, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("testkit: encode %s: %v", name, err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatalf("testkit: write %s: %v", p, err)
	}
	return p
}
