package security_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/reconnect"
)

// hostileNames are server names an MCP config may hold (Claude Code's
// configs do not restrict them). marker is a file each would create if a
// shell ever saw it.
func hostileNames(marker string) []string {
	return []string{
		"../../escape",
		"../" + strings.Repeat("../", 20) + "tmp/nw-escape",
		"/abs/path",
		"..",
		"a;touch " + marker,
		"$(touch " + marker + ")",
		"`touch " + marker + "`",
		`quo"te'd "$(touch ` + marker + `)"`,
		"new\nline\r\n; touch " + marker,
		"ünïcödé-服务器-😀",
		"-rf",
		"{server}",
		"tab\there && touch " + marker + " || touch " + marker,
		strings.Repeat("x/", 200),
	}
}

// The probe lock of any server lives inside the cache's .locks folder, and
// taking it creates nothing anywhere else.
func TestProbeLockPathStaysInside(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	store := &healthcheck.Store{Path: filepath.Join(dir, "state", "cache.json")}
	locks := store.Path + ".locks"
	for _, name := range hostileNames(marker) {
		p := store.ProbeLockPath(name)
		if filepath.Dir(p) != locks || filepath.Clean(p) != p || strings.ContainsAny(filepath.Base(p), "/\x00\n") {
			t.Errorf("ProbeLockPath(%q) = %q, outside %s", name, p, locks)
		}
		l, ok, err := store.AcquireProbe(context.Background(), name, time.Second)
		if err != nil || !ok {
			t.Fatalf("AcquireProbe(%q): %v %v", name, ok, err)
		}
		l.Release()
	}
	walkFiles(t, dir, func(path string, fi os.FileInfo) {
		if path == dir || path == filepath.Join(dir, "state") || path == locks {
			return
		}
		if filepath.Dir(path) != locks {
			t.Errorf("taking probe locks created %s", path)
		}
	})
	if _, err := os.Stat("/tmp/nw-escape"); err == nil {
		t.Errorf("/tmp/nw-escape exists")
	}
}

// {server} lands inside one argument: the name adds no argument and runs
// no command, whatever it holds.
func TestReconnectPlaceholderIsOneArgument(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	for _, command := range []string{`printf '%s\n' {server}`, `printf "%s\n" "{server}"`, `printf '%s\n' pre-{server}-post`} {
		argv, err := reconnect.Split(command)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range hostileNames(marker) {
			got := reconnect.Expand(argv, name)
			if len(got) != len(argv) {
				t.Fatalf("Expand(%q, %q) = %q: %d arguments, want %d", argv, name, got, len(got), len(argv))
			}
			want := strings.ReplaceAll(argv[2], reconnect.Placeholder, name)
			if got[2] != want {
				t.Errorf("argument %q, want %q", got[2], want)
			}
			out := reconnect.Run(context.Background(), got, reconnect.Options{Timeout: 5 * time.Second, Dir: dir})
			if !out.OK {
				t.Fatalf("run %q: %s", got, out.Err)
			}
			if out.Output != strings.TrimSpace(want) {
				t.Errorf("printf printed %q, want %q", out.Output, strings.TrimSpace(want))
			}
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a server name ran a command")
	}
}

// Through the real hook: a config whose servers have hostile names, each
// failing to start, with NIGHTWATCH_RECONNECT_COMMAND=`echo {server}`.
// Each call is blocked with a valid JSON decision naming the server; the
// cache and events stay valid JSON with the exact name; no command runs;
// every lock stays inside .locks.
func TestHostileServerNamesThroughTheHook(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	for i, name := range hostileNames(marker) {
		t.Run(strings.NewReplacer("/", "_", "\n", "_").Replace(name), func(t *testing.T) {
			t.Parallel()
			e := newHookEnv(t)
			cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
				name: map[string]any{"command": filepath.Join(dir, "does-not-exist"), "args": []string{name}},
			}})
			e.Config = filepath.Join(e.Home, "mcp.json")
			writeFile(t, e.Config, string(cfg), 0o600)
			tool := "mcp__" + mcpconfig.NormalizeName(name) + "__x"
			reconnectCmd := "echo {server}"
			if i%2 == 1 {
				reconnectCmd = "echo {server} $(touch " + marker + ") `touch " + marker + "`"
			}
			r := runHook(t, e, strings.NewReader(preIn(tool, `{}`, e.Home)), "NIGHTWATCH_RECONNECT_COMMAND="+reconnectCmd)
			if r.Code != 2 {
				t.Fatalf("case %d: exit %d, want 2 (the server cannot start); stderr %q", i, r.Code, r.Stderr)
			}
			reason := denyReason(t, r.Stdout)
			if !strings.Contains(reason, strconv.Quote(name)) {
				t.Errorf("reason does not name %q: %q", name, reason)
			}
			if strings.ContainsAny(reason, "\n\r") || !strings.Contains(reason, "("+strings.TrimSuffix(tool, "x")+"*)") {
				t.Errorf("reason prints the raw name or not the tool prefix %s: %q", tool, reason)
			}
			checkStateJSON(t, e, name)
			// The reconnect ran, as one echo with the name as one argument.
			if log := readFile(t, e.Log); !strings.Contains(log, "reconnect") {
				t.Errorf("no reconnect in the hook's log:\n%s", log)
			}
			// reconnect.Run reports the argv it ran: echo and the name, the
			// name whole.
			if !strings.Contains(readFile(t, e.State), mustJSONFragment("echo "+name)) {
				t.Errorf("the cache does not show the reconnect `echo %s`:\n%s", name, readFile(t, e.State))
			}
			locks := e.State + ".locks"
			walkFiles(t, e.Home, func(path string, fi os.FileInfo) {
				if strings.HasPrefix(path, locks+string(filepath.Separator)) && filepath.Dir(path) != locks {
					t.Errorf("lock file %s outside %s", path, locks)
				}
			})
		})
	}
	t.Cleanup(func() {
		if _, err := os.Stat(marker); err == nil {
			t.Error("a server name or the reconnect command ran a shell command")
		}
	})
}

// mustJSONFragment is s as encoding/json writes it, without the quotes.
func mustJSONFragment(name string) string {
	b, _ := json.Marshal(name)
	return strings.Trim(string(b), `"`)
}

// checkStateJSON proves the cache and the events file are valid JSON and
// hold name exactly as configured.
func checkStateJSON(t *testing.T, e *hookEnv, name string) {
	t.Helper()
	var cache struct {
		Servers map[string]json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal([]byte(readFile(t, e.State)), &cache); err != nil {
		t.Fatalf("cache is not valid JSON: %v", err)
	}
	if _, ok := cache.Servers[name]; !ok {
		t.Errorf("cache has no entry named %q: %v", name, keys(cache.Servers))
	}
	f, err := os.Open(e.Events)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var ev healthcheck.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("events line %q: %v", sc.Text(), err)
		}
		if ev.Server != name {
			t.Errorf("event for %q, want %q", ev.Server, name)
		}
		n++
	}
	if n == 0 {
		t.Error("no events written")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
