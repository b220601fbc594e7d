package probe

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

func TestStdioModes(t *testing.T) {
	bin := testkit.BuildTestServer(t)
	const requiredVar = "NW_PROBE_TEST_KEY"
	tests := []struct {
		name      string
		mode      string
		env       map[string]string
		timeout   time.Duration
		listTools bool
		want      Verdict
		reason    []string      // each must appear in the reason
		minTime   time.Duration // the delay the server itself imposes: a lower bound no machine breaks
		anyEra    bool          // either era is a right answer
		era       Era           // when healthy; "" means Modern, the go-sdk's own
	}{
		{name: "healthy", mode: "healthy", listTools: true, want: Healthy,
			reason: []string{"answered server/discover as " + mcpserver.ServerName, "(protocol 2026-07-28, modern)"}},
		{name: "legacy server refuses discover", mode: "legacy", listTools: true, want: Healthy, era: Legacy,
			reason: []string{"answered initialize as " + mcpserver.ServerName, "legacy: server/discover got JSON-RPC error -32601"}},
		// Healthy, and the reason names the 1 s discover wait: the probe
		// fell back to initialize after it, not after the 5 s timeout
		// (which would have ended the probe).
		{name: "legacy server ignores discover", mode: "ignore-discover", listTools: true, want: Healthy, era: Legacy,
			reason: []string{"answered initialize as", "legacy: server/discover unanswered within 1s"}},
		{name: "dies on discover, respawned", mode: "die-on-discover", listTools: true, want: Healthy, era: Legacy,
			reason: []string{"answered initialize as", "exited (exit status 1) on server/discover and was started again"}},
		// After the warm-up the server answers discover and the initialize
		// sent after the probe's discover wait; go-sdk handles requests
		// concurrently, so which answer comes first is the scheduler's,
		// and either era is right.
		{name: "slow handshake, late discover answer", mode: "slow-handshake=1500ms", listTools: true, want: Healthy,
			minTime: 1500 * time.Millisecond, reason: []string{"answered "}, anyEra: true},
		{name: "healthy without tools/list", mode: "healthy", want: Healthy},
		{name: "exit at start", mode: "exit-at-start", want: Transport,
			reason: []string{"exited (exit status 1) before answering initialize", "exit-at-start: refusing to start"}},
		{name: "missing API key crashes the handshake", mode: "exit-during-handshake", want: Transport,
			reason: []string{"exited (exit status 1) before answering initialize", "NOTES_API_KEY is not set"}},
		{name: "required env missing", mode: "require-env=" + requiredVar, want: Transport,
			reason: []string{requiredVar + " is not set"}},
		{name: "required env from config", mode: "require-env=" + requiredVar,
			env: map[string]string{requiredVar: "configured"}, listTools: true, want: Healthy},
		{name: "never answers", mode: "never-answer", timeout: time.Second, want: Transport,
			reason: []string{"no answer to initialize within 1s (hang)"}},
		{name: "slow start within timeout", mode: "slow-start=300ms", want: Healthy, minTime: 300 * time.Millisecond},
		{name: "slow start past timeout", mode: "slow-start=5s", timeout: time.Second, want: Transport,
			reason: []string{"within 1s (hang)"}},
		{name: "noisy stdout is skipped", mode: "noisy-stdout", listTools: true, want: Healthy,
			reason: []string{mcpserver.NoisyLine}},
		{name: "2026 server that refuses initialize speaks discover", mode: "discover-only", want: Healthy,
			reason: []string{"answered server/discover"}},
		{name: "2026 server that ignores discover and refuses initialize", mode: "discover-only,ignore-discover", want: Healthy,
			era: Legacy, reason: []string{"answered initialize with JSON-RPC error -32601"}},
		{name: "ignores SIGTERM after answering", mode: "ignore-sigterm,linger", listTools: true, want: Healthy},
		{name: "ignores SIGTERM and hangs", mode: "ignore-sigterm,never-answer", timeout: time.Second, want: Transport,
			reason: []string{"(hang)"}},
		{name: "grandchild holding stdout", mode: "spawn-child,linger", listTools: true, want: Healthy},
		{name: "grandchild ignoring SIGTERM, leader crashes", mode: "spawn-child,exit-during-handshake", want: Transport,
			reason: []string{"NOTES_API_KEY is not set"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pidfile := filepath.Join(t.TempDir(), "pids")
			srv := &mcpconfig.Server{Name: "test", Transport: mcpconfig.Stdio, Command: bin,
				Args: []string{"--mode", tt.mode, "--pidfile", pidfile}, Env: tt.env}
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			// The base environment must not supply the variable itself.
			environ := withoutVar(os.Environ(), requiredVar)

			start := time.Now()
			res := Stdio(context.Background(), srv, Options{Timeout: timeout, ListTools: tt.listTools, Environ: environ})
			requireNotHung(t, start, timeout)
			t.Logf("%+v", res)

			if res.Verdict != tt.want {
				t.Fatalf("verdict %s, want %s (reason %q)", res.Verdict, tt.want, res.Reason)
			}
			for _, part := range tt.reason {
				if !strings.Contains(res.Reason, part) {
					t.Errorf("reason %q lacks %q", res.Reason, part)
				}
			}
			if res.Status != 0 {
				t.Errorf("status %d for stdio", res.Status)
			}
			switch {
			case res.Verdict != Healthy:
				if res.Tools != -1 {
					t.Errorf("tools %d on failure, want -1", res.Tools)
				}
			case tt.listTools:
				if res.Tools != len(mcpserver.ToolNames) {
					t.Errorf("tools %d, want %d", res.Tools, len(mcpserver.ToolNames))
				}
			default:
				if res.Tools != -1 {
					t.Errorf("tools %d without ListTools, want -1", res.Tools)
				}
			}
			if res.Verdict == Healthy && res.Latency < tt.minTime {
				t.Errorf("latency %s, want at least %s", res.Latency, tt.minTime)
			}
			if res.Verdict == Healthy {
				wantEra, wantVersion := tt.era, ModernProtocolVersion
				if wantEra == "" {
					wantEra = Modern
				}
				if wantEra == Legacy {
					wantVersion = ClientProtocolVersion
				}
				if strings.Contains(tt.mode, "discover-only") && wantEra == Legacy {
					wantVersion = "" // initialize was refused
				}
				if tt.anyEra && res.Era != "" {
					wantEra, wantVersion = res.Era, res.ProtocolVersion
				}
				if res.Era != wantEra || res.ProtocolVersion != wantVersion {
					t.Errorf("era %q protocol %q, want %q %q", res.Era, res.ProtocolVersion, wantEra, wantVersion)
				}
				if wantSlow := strings.Contains(tt.mode, "ignore-discover") || strings.Contains(tt.mode, "slow-handshake"); res.SlowDiscover != wantSlow {
					t.Errorf("slow discover %v, want %v", res.SlowDiscover, wantSlow)
				}
				if wantEra == Modern && !tt.anyEra && !slices.Contains(res.SupportedVersions, ModernProtocolVersion) {
					t.Errorf("supported versions %q lack %s", res.SupportedVersions, ModernProtocolVersion)
				}
			}
			requireGone(t, readPids(t, pidfile))
		})
	}
}

// A stdio server gets the base variables and its own env, nothing else of
// the session's environment (least privilege: another server's key, an
// env_file value, ANTHROPIC_API_KEY).
func TestStdioEnvironment(t *testing.T) {
	bin := testkit.BuildTestServer(t)
	const name = "NW_PROBE_ENV_CHECK"
	base := withoutVar(os.Environ(), name)
	tests := []struct {
		name    string
		environ []string
		env     map[string]string
		want    Verdict
	}{
		{"not from the session environment", append(base, name+"=session"), nil, Transport},
		{"from the server's env", base, map[string]string{name: "config"}, Healthy},
		{"server's env overrides the session's", append(base, name+"=session"), map[string]string{name: ""}, Transport},
		{"nowhere", base, nil, Transport},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := &mcpconfig.Server{Transport: mcpconfig.Stdio, Command: bin,
				Args: []string{"--mode", "require-env=" + name}, Env: tt.env}
			res := Stdio(context.Background(), srv, Options{Timeout: 5 * time.Second, Environ: tt.environ})
			if res.Verdict != tt.want {
				t.Errorf("verdict %s, want %s (reason %q)", res.Verdict, tt.want, res.Reason)
			}
		})
	}
}

// A bare command name is looked up in the server's PATH, and a relative one
// in its cwd, as Claude Code's spawn does.
func TestStdioCommandResolution(t *testing.T) {
	bin := testkit.BuildTestServer(t)
	dir := filepath.Dir(bin)
	tests := []struct {
		name    string
		command string
		env     map[string]string
		cwd     string
		want    Verdict
		reason  string
	}{
		{name: "bare name on the server's PATH", command: "nwtestserver", env: map[string]string{"PATH": dir}, want: Healthy},
		{name: "relative to cwd", command: "./nwtestserver", cwd: dir, want: Healthy},
		{name: "bare name not on PATH", command: "nwtestserver", env: map[string]string{"PATH": t.TempDir()},
			want: Transport, reason: `cannot start nwtestserver: executable "nwtestserver" not found`},
		{name: "missing file", command: "/nonexistent/nwtestserver", want: Transport,
			reason: "cannot start /nonexistent/nwtestserver:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := &mcpconfig.Server{Transport: mcpconfig.Stdio, Command: tt.command, Env: tt.env}
			res := Stdio(context.Background(), srv, Options{Timeout: 5 * time.Second, Cwd: tt.cwd})
			if res.Verdict != tt.want || !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("got %s %q, want %s containing %q", res.Verdict, res.Reason, tt.want, tt.reason)
			}
		})
	}
}

// Programs that are not MCP servers: output that is not JSON-RPC makes the
// verdict NotMCP, silence makes it Transport.
func TestStdioNotMCP(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   Verdict
		reason []string
	}{
		{"usage text then exit", `echo "usage: tool [flags]"; exit 2`, NotMCP,
			[]string{`printed non-JSON-RPC output "usage: tool [flags]"`, "exited (exit status 2)"}},
		{"JSON that is not JSON-RPC, then hang", `echo '{"hello":"world"}'; exec sleep 30`, NotMCP,
			[]string{"no answer to initialize within 1s"}},
		{"silent exit", `exit 0`, Transport, []string{"exited (exit status 0) before answering initialize (no stderr output)"}},
		{"closes stdout but keeps running", `exec >&-; exec sleep 30`, Transport,
			[]string{"closed stdout without answering initialize"}},
		{"killed by a signal", `kill -9 $$`, Transport, []string{"killed by signal: killed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := &mcpconfig.Server{Transport: mcpconfig.Stdio, Command: "/bin/sh", Args: []string{"-c", tt.script}}
			start := time.Now()
			res := Stdio(context.Background(), srv, Options{Timeout: time.Second})
			requireNotHung(t, start, time.Second)
			if res.Verdict != tt.want {
				t.Errorf("verdict %s, want %s (reason %q)", res.Verdict, tt.want, res.Reason)
			}
			for _, part := range tt.reason {
				if !strings.Contains(res.Reason, part) {
					t.Errorf("reason %q lacks %q", res.Reason, part)
				}
			}
		})
	}
}

func TestStdioReasonHidesSecrets(t *testing.T) {
	const envSecret = "hunter2-env-value"
	srv := &mcpconfig.Server{Transport: mcpconfig.Stdio, Command: "/bin/sh",
		Args: []string{"-c", `echo "connecting with $NOTES_TOKEN" >&2; echo "API_KEY=abcd1234efgh" >&2; ` +
			`echo "Authorization: Bearer tok_0123456789abcdef" >&2; exit 1`},
		Env: map[string]string{"NOTES_TOKEN": envSecret}}
	res := Stdio(context.Background(), srv, Options{Timeout: 2 * time.Second})
	if res.Verdict != Transport || !strings.Contains(res.Reason, "connecting with") {
		t.Fatalf("got %s %q", res.Verdict, res.Reason)
	}
	assertNoSecret(t, res.Reason, envSecret, "abcd1234efgh", "tok_0123456789abcdef")
}

// The caller's context bounds the probe as well as opts.Timeout.
func TestStdioCallerCancel(t *testing.T) {
	bin := testkit.BuildTestServer(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	srv := &mcpconfig.Server{Transport: mcpconfig.Stdio, Command: bin,
		Args: []string{"--mode", "never-answer,ignore-sigterm", "--pidfile", pidfile}}
	// The caller's bound is the shorter; the reason says which bound cut
	// the probe, so no clock reading is needed to tell them apart.
	const callerBound, ownTimeout = 2 * time.Second, time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), callerBound)
	defer cancel()
	res := Stdio(ctx, srv, Options{Timeout: ownTimeout})
	// The reason names the caller's bound (what was left of it when the
	// probe started), not the probe's own timeout.
	m := regexp.MustCompile(`no answer to initialize within (\S+) \(hang\)`).FindStringSubmatch(res.Reason)
	if res.Verdict != Transport || m == nil {
		t.Fatalf("got %s %q, want the caller's bound in the reason", res.Verdict, res.Reason)
	}
	if d, err := time.ParseDuration(m[1]); err != nil || d <= 0 || d > callerBound {
		t.Errorf("reason names %s, want the caller's bound of at most %s: %q", m[1], callerBound, res.Reason)
	}
	requireGone(t, readPids(t, pidfile))
}

// The control file is re-read on every message: the same server turns from
// healthy to crashing without a restart.
func TestStdioControlFile(t *testing.T) {
	bin := testkit.BuildTestServer(t)
	control := filepath.Join(t.TempDir(), "mode")
	srv := &mcpconfig.Server{Transport: mcpconfig.Stdio, Command: bin, Args: []string{"--control", control}}
	for _, step := range []struct {
		mode string
		want Verdict
	}{{"healthy", Healthy}, {"exit-during-handshake", Transport}, {"", Healthy}} {
		if err := os.WriteFile(control, []byte(step.mode), 0o644); err != nil {
			t.Fatal(err)
		}
		if res := Stdio(context.Background(), srv, Options{Timeout: 5 * time.Second}); res.Verdict != step.want {
			t.Errorf("mode %q: verdict %s (%q), want %s", step.mode, res.Verdict, res.Reason, step.want)
		}
	}
}

func withoutVar(environ []string, name string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 16}
	tb.Write([]byte("first line\nsecond\n"))
	tb.Write([]byte("third\n\n"))
	if got, want := tb.tail(), "…second | third"; got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
	small := &tailBuffer{max: 100}
	small.Write([]byte("a\r\nb\n"))
	if got := small.tail(); got != "a | b" {
		t.Errorf("tail = %q", got)
	}
}

// No goroutine of a stdio probe outlives the call, whatever the server did.
// (Not parallel: it must not see other tests' probes.)
func TestStdioLeavesNoGoroutines(t *testing.T) {
	bin := testkit.BuildTestServer(t)
	for _, mode := range []string{"healthy", "never-answer,ignore-sigterm", "exit-during-handshake", "spawn-child,linger,noisy-stdout"} {
		srv := &mcpconfig.Server{Transport: mcpconfig.Stdio, Command: bin, Args: []string{"--mode", mode}}
		res := Stdio(context.Background(), srv, Options{Timeout: 500 * time.Millisecond, ListTools: true})
		if left := probeGoroutines(); len(left) > 0 {
			t.Errorf("mode %s (%s): %d goroutines outlive the probe:\n%s", mode, res.Verdict, len(left), strings.Join(left, "\n\n"))
		}
	}
}

// A server that ends on server/discover is started again; when that start
// fails, the reason says so (and the stopped first process is not stopped
// twice).
func TestStdioRespawnFails(t *testing.T) {
	script := filepath.Join(t.TempDir(), "once.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nrm -f \"$0\"\necho gone >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := Stdio(context.Background(), &mcpconfig.Server{Name: "once", Transport: mcpconfig.Stdio, Command: script}, Options{Timeout: 3 * time.Second})
	t.Logf("%+v", res)
	if res.Verdict != Transport || !strings.Contains(res.Reason, "starting the server again after it ended on server/discover") {
		t.Errorf("got %+v", res)
	}
}

// The server's process sees its own env and the base variables, and not
// another server's key, an env_file value or the agent's API key that the
// session's environment holds.
func TestStdioEnvironmentIsLeastPrivilege(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "env")
	script := filepath.Join(dir, "dump-env")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nenv > "+dump+"\nexec "+testkit.BuildTestServer(t)+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	session := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8",
		"BETA_API_KEY=beta-secret-0123", "ANTHROPIC_API_KEY=sk-ant-agent-0123", "ENVFILE_VALUE=envfile-0123"}
	srv := &mcpconfig.Server{Transport: mcpconfig.Stdio, Command: script, Env: map[string]string{"ALPHA_API_KEY": "alpha-own-0123"}}
	res := Stdio(context.Background(), srv, Options{Timeout: 5 * time.Second, Environ: session})
	if res.Verdict != Healthy {
		t.Fatalf("verdict %s (%s)", res.Verdict, res.Reason)
	}
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, want := range []string{"ALPHA_API_KEY=alpha-own-0123", "HOME=" + dir, "LANG=C.UTF-8", "PATH="} {
		if !strings.Contains(got, want+"\n") && !strings.Contains(got, want) {
			t.Errorf("the server lacks %s:\n%s", want, got)
		}
	}
	for _, leak := range []string{"beta-secret-0123", "sk-ant-agent-0123", "envfile-0123"} {
		if strings.Contains(got, leak) {
			t.Errorf("the server's environment holds %q, which is not its own:\n%s", leak, got)
		}
	}
}

// A server that answers the handshake with one 10 MiB line (over the
// probe's 8 MiB bound) is reported for what it did at once, not as
// "non-JSON-RPC output" after the whole timeout.
func TestStdioOverlongLineIsSaidAtOnce(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "overlong")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
read request
printf '{"jsonrpc":"2.0","id":1,"result":{"padding":"'
head -c 10485760 /dev/zero | tr '\0' a
printf '"}}\n'
echo "wrote the big answer" >&2
exec sleep 60
`), 0o700); err != nil {
		t.Fatal(err)
	}
	srv := &mcpconfig.Server{Transport: mcpconfig.Stdio, Command: script}
	// The server then sleeps a minute, past which the timeout is set: a
	// probe that waited for more than the line would get no answer and
	// end by the server's exit or the timeout, both other reasons. So the
	// reason itself proves it was said at once; the time is logged only.
	start := time.Now()
	res := Stdio(context.Background(), srv, Options{Timeout: 2 * time.Minute})
	took := time.Since(start)
	if res.Verdict != NotMCP || !strings.Contains(res.Reason, "stdout line longer than 8 MiB") || res.TimedOutAfter != 0 {
		t.Errorf("verdict %s, reason %q, timed out after %s; want not-mcp, a line longer than 8 MiB, no timeout",
			res.Verdict, res.Reason, res.TimedOutAfter)
	}
	t.Logf("%s in %s", res.Reason, took.Round(time.Millisecond))
}
