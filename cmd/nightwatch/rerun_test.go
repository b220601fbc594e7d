package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// TestRerunRunsOnlyWhatNeedsIt: a night where one job is done, one fails
// its verify and one is skipped because it needs the failed one. The
// morning report says what to do about the two, links the done job's final
// message, and names the command; once the verify's file exists,
// `nightwatch rerun` runs a new night of just those two (the need met in
// that night), and the done job's session never runs again. On every
// supported CLI, with the real CLI against the fake Messages API.
func TestRerunRunsOnlyWhatNeedsIt(t *testing.T) {
	testkit.ForEachClaude(t, testRerunRunsOnlyWhatNeedsIt)
}

func testRerunRunsOnlyWhatNeedsIt(t *testing.T, version string) {
	bin := testkit.BuildNightwatch(t)
	api := fakeapi.Start(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	_ = os.MkdirAll(home, 0o700)
	ok := filepath.Join(dir, "checked.ok")
	batch := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf(`version: 1
name: rerun
state_dir: ./state
agent: {command: %s}
defaults: {timeout: 2m, retries: 0}
jobs:
  - {name: good, prompt: %s}
  - {name: checked, prompt: %s, verify: [test, -f, %s]}
  - {name: after, needs: [checked], prompt: %s}
`, q(testkit.ClaudeBinOf(t, version)), script("good"), script("checked"), q(ok), script("after"))
	if err := os.WriteFile(batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ANTHROPIC_BASE_URL=" + api.URL(),
		"ANTHROPIC_API_KEY=test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	nw := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = env, dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String(), code
	}
	state := filepath.Join(dir, "state")

	out, code := nw("run", batch, "--maintenance-interval", "300ms")
	if code != 1 {
		t.Fatalf("night 1: exit %d, want 1 (a job failed):\n%s", code, out)
	}
	first := journals(t, state)
	if len(first) != 1 {
		t.Fatalf("journals after night 1: %v", first)
	}
	if got := started(t, first[0]); strings.Join(got, ",") != "checked,good" {
		t.Errorf("night 1 started %v", got)
	}
	md, _ := nw("report", batch)
	for _, want := range []string{"## What to do now", "**checked** (failed): its verify (", "checked.ok) exited 1", "**after** (skipped)",
		"fix checked first", "Re-run just checked, after as a new night", "nightwatch rerun " + batch,
		"final message " + filepath.Join(statedir.Attempt(state, statedir.RunID(first[0]), "good", 1), statedir.AttemptFinal)} {
		if !strings.Contains(md, want) {
			t.Errorf("night 1's report lacks %q:\n%s", want, md)
		}
	}
	final, err := os.ReadFile(filepath.Join(statedir.Attempt(state, statedir.RunID(first[0]), "good", 1), statedir.AttemptFinal))
	if err != nil || strings.TrimSpace(string(final)) != fakeapi.FinalText {
		t.Errorf("good's final message: %q, %v; want the session's last text %q", final, err, fakeapi.FinalText)
	}

	if err := os.WriteFile(ok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = nw("rerun", batch, "--maintenance-interval", "300ms")
	if code != 0 {
		t.Fatalf("rerun: exit %d, want 0:\n%s", code, out)
	}
	second := journals(t, state)
	if len(second) != 2 {
		t.Fatalf("journals after the re-run: %v, want a new one beside night 1's", second)
	}
	rerun := second[0]
	if rerun == first[0] {
		rerun = second[1]
	}
	if got := started(t, rerun); strings.Join(got, ",") != "after,checked" {
		t.Errorf("the re-run started %v, want only after and checked", got)
	}
	events, err := journal.Read(rerun)
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	for _, ev := range events {
		if ev.Type == journal.RunStarted && !strings.Contains(ev.Reason, "re-runs checked, after of run "+statedir.RunID(first[0])) {
			t.Errorf("run-started says %q, want which jobs of which run it re-runs", ev.Reason)
		}
		if ev.Type == journal.JobFinished {
			done[ev.Job] = ev.Status == journal.Done
		}
	}
	if !done["checked"] || !done["after"] || len(done) != 2 {
		t.Errorf("the re-run's ends: %v, want checked and after done", done)
	}
	md, _ = nw("report", batch)
	if !strings.Contains(md, "This night re-runs checked, after of run "+statedir.RunID(first[0])) || strings.Contains(md, "## What to do now") {
		t.Errorf("the re-run's report should say what it re-ran, and need nothing more:\n%s", md)
	}
	// Nothing is left to re-run: a second rerun says so and starts nothing.
	out, code = nw("rerun", batch)
	if code != 0 || !strings.Contains(out, "nothing to re-run") || len(journals(t, state)) != 2 {
		t.Errorf("rerun of a night with nothing to re-run: exit %d, %d journals:\n%s", code, len(journals(t, state)), out)
	}
}

// journals are the journal files of the state folder, sorted.
func journals(t *testing.T, state string) []string {
	t.Helper()
	paths, err := filepath.Glob(statedir.Journals(state))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	return paths
}

// started are the jobs a journal started an attempt of, sorted, once each.
func started(t *testing.T, path string) []string {
	t.Helper()
	events, err := journal.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, ev := range events {
		if ev.Type == journal.JobStarted && !seen[ev.Job] {
			seen[ev.Job] = true
			out = append(out, ev.Job)
		}
	}
	sort.Strings(out)
	return out
}
