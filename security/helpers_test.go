// Package security_test attacks nightwatch from the outside: the real
// binary, real files and real processes, fed hostile payloads, names,
// placeholders, batch fields and planted symlinks. Each test proves that
// nightwatch does the safe thing.
package security_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// hookEnv is the world of one hook invocation: a private HOME and the
// state files under it.
type hookEnv struct {
	Home, State, Events, Log, Config string
	Extra                            []string
}

func newHookEnv(t *testing.T) *hookEnv {
	t.Helper()
	home := t.TempDir()
	return &hookEnv{
		Home:   home,
		State:  filepath.Join(home, "state", "cache.json"),
		Events: filepath.Join(home, "state", "events.jsonl"),
		Log:    filepath.Join(home, "state", "hook.log"),
	}
}

func (e *hookEnv) environ() []string {
	env := []string{
		"HOME=" + e.Home,
		"PATH=" + os.Getenv("PATH"),
		"NIGHTWATCH_STATE_PATH=" + e.State,
		"NIGHTWATCH_EVENTS=" + e.Events,
		"NIGHTWATCH_LOG=" + e.Log,
		"NIGHTWATCH_PROBE_TIMEOUT=3s",
		// These attacks are about what the hook decides and says; a hold
		// (up to two minutes of re-probing a server that is down) would
		// only delay the same verdict. Holds are tested in package hook.
		"NIGHTWATCH_MAX_HOLD=0",
	}
	if e.Config != "" {
		env = append(env, "NIGHTWATCH_MCP_CONFIG="+e.Config)
	}
	return append(env, e.Extra...)
}

type hookResult struct {
	Code           int
	Stdout, Stderr string
}

// runHook runs `nightwatch hook` with stdin and the environment of e.
func runHook(t *testing.T, e *hookEnv, stdin io.Reader, extraEnv ...string) hookResult {
	t.Helper()
	cmd := exec.Command(testkit.BuildNightwatch(t), "hook")
	cmd.Env = append(e.environ(), extraEnv...)
	cmd.Stdin = stdin
	cmd.Dir = e.Home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run hook: %v", err)
	}
	r := hookResult{code, out.String(), errb.String()}
	noCrash(t, r)
	return r
}

// noCrash fails the test when the hook crashed or used an exit code a
// hook must not use.
func noCrash(t *testing.T, r hookResult) {
	t.Helper()
	if r.Code != 0 && r.Code != 2 {
		t.Errorf("exit %d, want 0 or 2; stderr: %.2000s", r.Code, r.Stderr)
	}
	for _, bad := range []string{"panic:", "goroutine ", "internal error"} {
		if strings.Contains(r.Stderr, bad) || strings.Contains(r.Stdout, bad) {
			t.Errorf("%q in the hook's output; stderr: %.2000s", bad, r.Stderr)
		}
	}
}

// seedCache writes entries to the cache at path through the real store.
func seedCache(t testing.TB, path string, servers map[string]*healthcheck.Entry) {
	t.Helper()
	s := &healthcheck.Store{Path: path}
	if err := s.Update(func(f *healthcheck.File) error {
		for n, e := range servers {
			f.Servers[n] = e
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func healthy() *healthcheck.Entry {
	now := healthcheck.MillisOf(time.Now())
	return &healthcheck.Entry{Status: healthcheck.StatusHealthy, CheckedAt: now, ExpiresAt: now + 3600_000}
}

func unhealthy() *healthcheck.Entry {
	now := healthcheck.MillisOf(time.Now())
	return &healthcheck.Entry{Status: healthcheck.StatusUnhealthy, CheckedAt: now, ExpiresAt: now,
		FailureCount: 1, LastError: "connection refused", LastFailureCode: "transport",
		NextRetryAt: now + 3600_000, UnhealthySince: now}
}

// pre is a PreToolUse payload for tool with the given raw tool_input.
func pre(tool, toolInput string) string { return preIn(tool, toolInput, "/nonexistent") }

// preIn is pre with the session's cwd (where a probe starts the server).
func preIn(tool, toolInput, cwd string) string {
	return `{"session_id":"s1","cwd":` + strconv.Quote(cwd) + `,"hook_event_name":"PreToolUse","tool_name":` +
		strconv.Quote(tool) + `,"tool_input":` + toolInput + `}`
}

// walkFiles calls fn for every entry under root (root included), without
// following symlinks.
func walkFiles(t *testing.T, root string, fn func(path string, fi os.FileInfo)) {
	t.Helper()
	err := filepath.Walk(root, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fn(path, fi)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonQuote is a YAML/JSON double-quoted string.
func jsonQuote(s string) string { return strconv.Quote(s) }
