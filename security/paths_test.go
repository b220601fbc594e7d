package security_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/session"
)

const theirs = "someone else's file\n"

// victim is a file outside nightwatch's state that a planted symlink
// points at; unchanged proves nothing was written through the link.
func victim(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "victim")
	writeFile(t, p, theirs, 0o644)
	return p
}

func unchanged(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("victim: %v", err)
	}
	if got := readFile(t, path); got != theirs || fi.Mode().Perm() != 0o644 {
		t.Errorf("the link's target %s changed: %q, mode %#o", path, got, fi.Mode().Perm())
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// The hook's files (cache, its lock, events, log) planted as symlinks, to
// an existing file or to a path that does not exist yet: the hook still
// decides, and never writes through the link.
func TestHookRefusesSymlinkedStateFiles(t *testing.T) {
	server := testkit.BuildTestServer(t)
	files := map[string]func(e *hookEnv) string{
		"cache":      func(e *hookEnv) string { return e.State },
		"cache lock": func(e *hookEnv) string { return e.State + ".lock" },
		"events":     func(e *hookEnv) string { return e.Events },
		"log":        func(e *hookEnv) string { return e.Log },
	}
	for name, file := range files {
		for _, dangling := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/dangling=%v", name, dangling), func(t *testing.T) {
				t.Parallel()
				e := newHookEnv(t)
				cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
					"notes": map[string]any{"command": server}, "dead": map[string]any{"command": "/nonexistent/dead"}}})
				e.Config = filepath.Join(e.Home, "mcp.json")
				writeFile(t, e.Config, string(cfg), 0o600)
				target := victim(t)
				if dangling {
					target = filepath.Join(t.TempDir(), "not-yet")
				}
				symlink(t, target, file(e))
				// A probe and a state change (healthy), then a probe, a state
				// change and a blocked call (dead): every writer runs.
				if r := runHook(t, e, strings.NewReader(preIn("mcp__notes__x", `{}`, e.Home))); r.Code != 0 {
					t.Fatalf("notes: exit %d: %s", r.Code, r.Stderr)
				}
				if r := runHook(t, e, strings.NewReader(preIn("mcp__dead__x", `{}`, e.Home))); r.Code != 2 {
					t.Fatalf("dead: exit %d, want 2: %s", r.Code, r.Stderr)
				} else if name != "cache lock" && !strings.Contains(r.Stderr, file(e)) {
					t.Errorf("stderr does not name the refused file %s: %q", file(e), r.Stderr)
				}
				if dangling {
					if _, err := os.Lstat(target); err == nil {
						t.Errorf("the hook created the link's target %s", target)
					}
				} else {
					unchanged(t, target)
				}
			})
		}
	}
}

// nightBatch writes a one-job batch with a scripted agent and returns its
// path and state folder.
func nightBatch(t *testing.T, extra string) (batch, stateDir string) {
	t.Helper()
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent")
	writeFile(t, agent, "#!/bin/sh\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"num_turns\":1,\"total_cost_usd\":0}'\n", 0o700)
	batch = filepath.Join(dir, "batch.yaml")
	writeFile(t, batch, fmt.Sprintf("version: 1\nname: paths\nstate_dir: ./state\nagent: {command: %q}\n%sjobs:\n  - {name: a, prompt: hello}\n",
		agent, extra), 0o600)
	return batch, filepath.Join(dir, "state")
}

func nightwatchCmd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(testkit.BuildNightwatch(t), args...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "panic:") {
		t.Fatalf("nightwatch %v panicked:\n%s", args, out)
	}
	return code, string(out)
}

// `nightwatch report -o LINK` refuses to replace a symlink.
func TestReportRefusesSymlinkedOutput(t *testing.T) {
	batch, stateDir := nightBatch(t, "")
	if code, out := nightwatchCmd(t, "run", batch); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	for _, format := range []string{"md", "html", "json"} {
		target := victim(t)
		link := filepath.Join(stateDir, "reports", "out."+format)
		symlink(t, target, link)
		code, out := nightwatchCmd(t, "report", batch, "--format", format, "-o", link)
		if code == 0 {
			t.Errorf("report -o through a symlink succeeded: %s", out)
		}
		unchanged(t, target)
	}
}

// A journal planted as a symlink (runs/<id>.jsonl, an unfinished run with a
// torn last line, so that resuming would cut it and append to it) is never
// written through: its target is unchanged after `nightwatch run`.
func TestResumeNeverWritesThroughASymlinkedJournal(t *testing.T) {
	batch, stateDir := nightBatch(t, "")
	if code, out := nightwatchCmd(t, "run", batch); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	journals, _ := filepath.Glob(filepath.Join(stateDir, "runs", "*.jsonl"))
	if len(journals) != 1 {
		t.Fatalf("journals: %v", journals)
	}
	first, _, _ := strings.Cut(readFile(t, journals[0]), "\n")
	content := first + "\n" + `{"type":"job_sta`
	target := filepath.Join(t.TempDir(), "journal")
	writeFile(t, target, content, 0o644)
	link := filepath.Join(stateDir, "runs", "99991231T235959Z-ffff.jsonl")
	symlink(t, target, link)
	_, out := nightwatchCmd(t, "run", batch)
	if got := readFile(t, target); got != content {
		t.Errorf("resume wrote through the symlinked journal: %q\n%s", got, out)
	}
}

// The files of a session attempt planted as symlinks after the attempt's
// folder was prepared: the session's stream and stderr are opened with
// O_NOFOLLOW, so the night writes nothing through them.
func TestSessionRefusesSymlinkedStreamFiles(t *testing.T) {
	batch, _ := nightBatch(t, "")
	b, err := jobs.Load(batch, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	spec := session.Spec{Batch: b, Job: b.Jobs[0], RunID: "r1", Attempt: 1,
		Binary: testkit.BuildNightwatch(t), Env: []string{"PATH=" + os.Getenv("PATH")}}
	f, err := session.Prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	stream, stderr := victim(t), victim(t)
	symlink(t, stream, f.Stream)
	symlink(t, stderr, f.Stderr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := session.Run(ctx, spec, f, nil)
	t.Logf("outcome: %s %s", out.Status, out.Reason)
	unchanged(t, stream)
	unchanged(t, stderr)
	// A second PrepareSession must not replace settings/MCP config that
	// were swapped for symlinks either.
	settings := victim(t)
	if err := os.Remove(f.Settings); err != nil {
		t.Fatal(err)
	}
	symlink(t, settings, f.Settings)
	if _, err := session.Prepare(spec); err == nil {
		t.Error("PrepareSession replaced a symlinked settings file")
	}
	unchanged(t, settings)
}

// A cache file that is a symlink is read (it may be a user's choice) but
// never replaced: the healthcheck store reports the write failure.
func TestStoreRefusesSymlinkedCache(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere.json")
	writeFile(t, target, `{"version":1,"servers":{}}`, 0o600)
	link := filepath.Join(dir, "state", "cache.json")
	symlink(t, target, link)
	var warned []string
	s := &healthcheck.Store{Path: link, Warn: func(m string) { warned = append(warned, m) }}
	err := s.Update(func(f *healthcheck.File) error {
		f.Servers["x"] = healthy()
		return nil
	})
	if err == nil {
		t.Error("Update wrote through a symlinked cache")
	}
	if got := readFile(t, target); got != `{"version":1,"servers":{}}` {
		t.Errorf("target changed: %q", got)
	}
}

// A resumed run writes to a log and reports named by a run id known in
// advance: planted as symlinks, they are refused and their targets stay
// unchanged.
func TestResumedRunRefusesSymlinkedLogAndReports(t *testing.T) {
	batch, stateDir := nightBatch(t, "")
	if code, out := nightwatchCmd(t, "run", batch); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	journals, _ := filepath.Glob(filepath.Join(stateDir, "runs", "*.jsonl"))
	if len(journals) != 1 {
		t.Fatalf("journals: %v", journals)
	}
	first, _, _ := strings.Cut(readFile(t, journals[0]), "\n")
	const id = "99991231T235959Z-ffff"
	writeFile(t, filepath.Join(stateDir, "runs", id+".jsonl"), first+"\n", 0o600)
	logTarget, mdTarget, htmlTarget := victim(t), victim(t), victim(t)
	symlink(t, logTarget, filepath.Join(stateDir, "logs", id+".log"))
	symlink(t, mdTarget, filepath.Join(stateDir, "reports", id+".md"))
	symlink(t, htmlTarget, filepath.Join(stateDir, "reports", id+".html"))
	code, out := nightwatchCmd(t, "run", batch)
	t.Logf("exit %d\n%s", code, out)
	if !strings.Contains(out, "symlink") {
		t.Errorf("the run did not say it refused a symlink:\n%s", out)
	}
	unchanged(t, logTarget)
	unchanged(t, mdTarget)
	unchanged(t, htmlTarget)
}

// The batch's lock file planted as a symlink: `nightwatch run` refuses to
// lock through it (exit 2) and creates nothing at the link's target.
func TestRunRefusesSymlinkedBatchLock(t *testing.T) {
	batch, stateDir := nightBatch(t, "")
	for _, dangling := range []bool{true, false} {
		target := victim(t)
		if dangling {
			target = filepath.Join(t.TempDir(), "not-yet")
		}
		link := filepath.Join(stateDir, "paths.lock")
		_ = os.Remove(link)
		symlink(t, target, link)
		code, out := nightwatchCmd(t, "run", batch)
		if code == 0 || !strings.Contains(out, "symlink") {
			t.Errorf("run with a symlinked lock: exit %d\n%s", code, out)
		}
		if dangling {
			if _, err := os.Lstat(target); err == nil {
				t.Errorf("the run created the lock link's target")
			}
		} else {
			unchanged(t, target)
		}
	}
}
