package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// The operator commands, run as a user runs them: the built binary, a
// HOME of its own, a project folder as the working directory.

type cli struct {
	t    *testing.T
	bin  string
	home string
	cwd  string
}

func newCLI(t *testing.T) *cli {
	return &cli{t: t, bin: testkit.BuildNightwatch(t), home: t.TempDir(), cwd: t.TempDir()}
}

func (c *cli) run(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = c.cwd
	cmd.Env = []string{"HOME=" + c.home, "PATH=" + os.Getenv("PATH")}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func (c *cli) write(rel string, v any) string {
	c.t.Helper()
	p := rel
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.cwd, rel)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		c.t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}

func servers(m map[string]any) map[string]any { return map[string]any{"mcpServers": m} }

func TestProbeCommand(t *testing.T) {
	c := newCLI(t)
	srv := testkit.BuildTestServer(t)
	c.write(".mcp.json", servers(map[string]any{
		"good":   map[string]any{"command": srv},
		"broken": map[string]any{"command": srv, "args": []string{"--mode", "require-env=CAL_KEY"}},
	}))
	out, errOut, code := c.run("probe")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (one server down)\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"good", "healthy", "broken", "transport", "CAL_KEY"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	cache := filepath.Join(c.home, ".claude", "mcp-health-cache.json")
	fi, err := os.Stat(cache)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache %s: %v %v", cache, err, fi)
	}
	out, _, code = c.run("probe", "good", "--json")
	var rows []struct {
		Server  string
		Verdict string
		Tools   int
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 || len(rows) != 1 || rows[0].Tools < 5 {
		t.Fatalf("probe good --json: code %d, %v, %s", code, err, out)
	}
	if _, errOut, code := c.run("probe", "nosuch"); code != 2 || !strings.Contains(errOut, `"nosuch"`) {
		t.Errorf("unknown server: code %d %q", code, errOut)
	}
}

func TestStatusShowsSourceAndShadowed(t *testing.T) {
	c := newCLI(t)
	user := c.write(filepath.Join(c.home, ".claude.json"), servers(map[string]any{"notes": map[string]any{"command": "/bin/true"}}))
	project := c.write(".mcp.json", servers(map[string]any{"notes": map[string]any{"command": "/bin/false"}}))
	out, errOut, code := c.run("status", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var st struct {
		Servers []struct {
			Server   string
			Source   string
			Shadowed []struct{ Source string }
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err, out)
	}
	if len(st.Servers) != 1 || st.Servers[0].Source != project || len(st.Servers[0].Shadowed) != 1 || st.Servers[0].Shadowed[0].Source != user {
		t.Fatalf("want notes from %s shadowing %s, got %+v", project, user, st.Servers)
	}
}

func TestResetCommand(t *testing.T) {
	c := newCLI(t)
	state := filepath.Join(c.home, ".claude", "mcp-health-cache.json")
	s := healthcheck.DefaultSettings()
	now := time.Now()
	stuck := healthcheck.Entry{}
	for i := 0; i < 8; i++ {
		stuck = s.MarkUnhealthy(&stuck, now, healthcheck.Failure{Code: healthcheck.CodeUnavailable})
	}
	fresh := s.MarkUnhealthy(nil, now, healthcheck.Failure{Code: healthcheck.CodeUnavailable})
	ok := s.MarkHealthy(nil, now, "probe")
	err := (&healthcheck.Store{Path: state}).Update(func(f *healthcheck.File) error {
		f.Servers["stuck"], f.Servers["fresh"], f.Servers["ok"] = &stuck, &fresh, &ok
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if out, _, code := c.run("reset", "--stuck"); code != 0 || !strings.Contains(out, "reset: stuck") {
		t.Fatalf("reset --stuck: %d %s", code, out)
	}
	if _, errOut, _ := c.run("reset", "ghost"); !strings.Contains(errOut, "ghost was not in the cache") {
		t.Errorf("reset of an unknown server said nothing: %q", errOut)
	}
	if _, _, code := c.run("reset"); code != 2 {
		t.Errorf("reset with nothing to reset: exit %d, want 2", code)
	}
	f, _ := (&healthcheck.Store{Path: state}).Read()
	if f.Servers["stuck"] != nil || f.Servers["fresh"] == nil || f.Servers["ok"] == nil {
		t.Fatalf("after reset --stuck: %v", f.Servers)
	}
	if out, _, _ := c.run("reset", "--all"); !strings.Contains(out, "fresh, ok") {
		t.Fatalf("reset --all: %s", out)
	}
}
