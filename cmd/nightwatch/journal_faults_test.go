package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// The journal's faults, through the real `nightwatch run` with a scripted
// agent: a shell script standing in for claude that logs the prompt it
// was given to ran.log and, by its prompt, harms the journal mid-night.

type faultNight struct {
	t     *testing.T
	bin   string
	dir   string
	state string
	batch string
}

func newFaultNight(t *testing.T, jobsYAML string) *faultNight {
	f := &faultNight{t: t, bin: testkit.BuildNightwatch(t), dir: t.TempDir()}
	f.state = filepath.Join(f.dir, "state")
	agent := filepath.Join(f.dir, "agent")
	script := fmt.Sprintf(`#!/bin/sh
# The night's preflight asks for the agent's login first.
if [ "$1" = auth ]; then echo '{"loggedIn":true,"authMethod":"api_key"}'; exit 0; fi
# $2 is the prompt (claude -p <prompt> ...).
printf '%%s\n' "$2" >> %[1]s/ran.log
case "$2" in
  *chattr*) chattr +i %[2]s/runs/*.jsonl || exit 9 ;;
  *delete*) rm -f %[2]s/runs/*.jsonl ;;
  *hang*) if [ ! -e %[1]s/hung ]; then : > %[1]s/hung; sleep 60; fi ;;
esac
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0.01,"session_id":"s"}'
`, f.dir, f.state)
	if err := os.WriteFile(agent, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	f.batch = filepath.Join(f.dir, "night.yaml")
	yaml := fmt.Sprintf("version: 1\nname: faults\nstate_dir: ./state\nagent: {command: %s}\n"+
		"notify: {command: [/bin/sh, -c, %s]}\njobs:\n%s", q(agent), q("cat > "+filepath.Join(f.dir, "notified")), jobsYAML)
	if err := os.WriteFile(f.batch, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *faultNight) command() (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(f.bin, "run", f.batch)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.dir}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

func (f *faultNight) run() (string, int) {
	f.t.Helper()
	cmd, out := f.command()
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		f.t.Fatal(err)
	}
	return out.String(), code
}

// ran is how many times each prompt was given to the agent.
func (f *faultNight) ran() map[string]int {
	data, _ := os.ReadFile(filepath.Join(f.dir, "ran.log"))
	n := map[string]int{}
	for _, l := range strings.Fields(string(data)) {
		n[l]++
	}
	return n
}

func (f *faultNight) journalPath() string {
	f.t.Helper()
	paths, _ := filepath.Glob(statedir.Journals(f.state))
	if len(paths) != 1 {
		f.t.Fatalf("journals: %v", paths)
	}
	return paths[0]
}

// A journal made unwritable mid-night (chattr +i, as root): the night
// starts no job after that, exits 3 saying so, notifies, and the next run
// (the journal writable again) runs the jobs that did not run, and no
// finished one again. Before: exit 0 with "4 done", and the next run
// re-ran the finished jobs.
func TestRunStopsWhenTheJournalCannotBeWritten(t *testing.T) {
	if exec.Command("chattr", "--help").Run() != nil && os.Getuid() != 0 {
		t.Skip("needs chattr as root")
	}
	f := newFaultNight(t, `  - {name: a, prompt: a}
  - {name: b, prompt: b-chattr}
  - {name: c, prompt: c}
  - {name: d, prompt: d}
`)
	t.Cleanup(func() {
		paths, _ := filepath.Glob(statedir.Journals(f.state))
		for _, p := range paths {
			_ = exec.Command("chattr", "-i", p).Run()
		}
	})
	out, code := f.run()
	if f.ran()["b-chattr"] == 0 {
		t.Fatalf("the fault did not fire:\n%s", out)
	}
	if strings.Contains(out, "chattr: ") || f.ran()["b-chattr"] != 1 {
		t.Skipf("chattr does not work here:\n%s", out)
	}
	if code != 3 || !strings.Contains(out, "NIGHT STOPPED") || !strings.Contains(out, "journal") {
		t.Errorf("exit %d, want 3 and the journal failure said:\n%s", code, out)
	}
	if r := f.ran(); r["c"] != 0 || r["d"] != 0 {
		t.Errorf("jobs started after the journal failed: %v", r)
	}
	if note, _ := os.ReadFile(filepath.Join(f.dir, "notified")); !strings.Contains(string(note), "STOPPED") {
		t.Errorf("no notification of the failure: %q", note)
	}
	jp := f.journalPath()
	if _, err := os.Stat(journal.LostPath(jp)); err != nil {
		t.Errorf("the lines that missed the journal were not kept: %v", err)
	}
	// While the journal stays unwritable, a second run starts nothing.
	out, code = f.run()
	if code != 3 || f.ran()["a"] != 1 || f.ran()["c"] != 0 {
		t.Errorf("second run with the journal still unwritable: exit %d, ran %v:\n%s", code, f.ran(), out)
	}
	if err := exec.Command("chattr", "-i", jp).Run(); err != nil {
		t.Fatal(err)
	}
	out, code = f.run()
	if code != 0 {
		t.Errorf("resumed run: exit %d:\n%s", code, out)
	}
	want := map[string]int{"a": 1, "b-chattr": 1, "c": 1, "d": 1}
	if r := f.ran(); fmt.Sprint(r) != fmt.Sprint(want) {
		t.Errorf("ran %v, want each job once: %v\n%s", r, want, out)
	}
	if _, err := os.Stat(journal.LostPath(jp)); err == nil {
		t.Error("the lost file was not folded back into the journal")
	}
}

// A journal deleted mid-night is written anew with the run's start line and
// what finished, said loudly; after a crash the next run resumes it and
// runs no finished job again. Before: the new journal had no start line,
// so the next run started afresh and re-ran every finished job.
func TestRunRecreatesADeletedJournal(t *testing.T) {
	f := newFaultNight(t, `  - {name: a, prompt: a}
  - {name: b, prompt: b-delete}
  - {name: c, prompt: c-hang}
`)
	cmd, out := f.command()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(f.dir, "hung")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("job c never started:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// c's started line is written before its agent runs; kill once it is
	// in the journal written anew, not after a fixed time.
	for cStarted := false; !cStarted; time.Sleep(50 * time.Millisecond) {
		events, _ := journal.Read(f.journalPath())
		for _, ev := range events {
			cStarted = cStarted || (ev.Type == journal.JobStarted && ev.Job == "c")
		}
		if !cStarted && time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("job c's started line never reached the journal:\n%s", out)
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if !strings.Contains(out.String(), "was deleted") {
		t.Errorf("the deletion was not said:\n%s", out)
	}
	events, err := journal.Read(f.journalPath())
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 || events[0].Type != journal.RunStarted {
		t.Fatalf("the journal written anew does not start with the run's start line: %+v", events)
	}
	st := journal.Replay(events)
	if !st.Done["a"] || !st.Done["b"] {
		t.Errorf("the journal written anew lost what finished: %+v", st.Done)
	}
	text, code := f.run()
	if code != 0 {
		t.Errorf("resumed run: exit %d:\n%s", code, text)
	}
	if r := f.ran(); r["a"] != 1 || r["b-delete"] != 1 || r["c-hang"] != 2 {
		t.Errorf("ran %v: a finished job ran again, or c did not resume\n%s", r, text)
	}
}

// A torn line blocks no run: a journal whose torn write had the next line
// glued to it (another batch's) and a torn last line (this batch's, the
// supervisor died mid-write) are both read; the torn text is set aside for
// the operator, the run resumes and writes its report. Before: exit 2 for
// every batch of the state folder.
func TestRunSurvivesTornJournalLines(t *testing.T) {
	f := newFaultNight(t, `  - {name: a, prompt: a}
  - {name: b, prompt: b}
`)
	runs := filepath.Join(f.state, "runs")
	if err := os.MkdirAll(runs, 0o700); err != nil {
		t.Fatal(err)
	}
	other := `{"type":"run-started","run":"20260101T010000Z-aaaa","time":"2026-01-01T01:00:00Z","batch":"other"}
{"type":"job-started","run":"20260101T010000Z-aaaa","time":"2026-01-01T01:00:01Z","job":"x","attempt":1}
{"type":"job-fin{"type":"job-finished","run":"20260101T010000Z-aaaa","time":"2026-01-01T01:00:02Z","job":"x","attempt":1,"status":"done"}
{"type":"run-finished","run":"20260101T010000Z-aaaa","time":"2026-01-01T01:00:03Z"}
`
	mine := `{"type":"run-started","run":"20260102T010000Z-bbbb","time":"2026-01-02T01:00:00Z","batch":"faults"}
{"type":"job-started","run":"20260102T010000Z-bbbb","time":"2026-01-02T01:00:01Z","job":"a","attempt":1}
{"type":"job-finished","run":"20260102T010000Z-bbbb","time":"2026-01-02T01:00:02Z","job":"a","attempt":1,"status":"done"}
{"type":"job-sta`
	otherPath := filepath.Join(runs, "20260101T010000Z-aaaa.jsonl")
	minePath := filepath.Join(runs, "20260102T010000Z-bbbb.jsonl")
	if err := os.WriteFile(otherPath, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(minePath, []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := f.run()
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	if r := f.ran(); r["a"] != 0 || r["b"] != 1 {
		t.Errorf("ran %v, want only b (a was done)", r)
	}
	if !strings.Contains(out, "report:") {
		t.Errorf("no morning report:\n%s", out)
	}
	if torn, err := os.ReadFile(journal.TornPath(minePath)); err != nil || !strings.Contains(string(torn), `{"type":"job-sta`) {
		t.Errorf("the torn last line was not set aside: %q %v", torn, err)
	}
	events, err := journal.Read(minePath)
	if err != nil {
		t.Fatal(err)
	}
	if st := journal.Replay(events); !st.Done["a"] || !st.Done["b"] {
		t.Errorf("resumed journal: %+v", st.Done)
	}
	if events, err := journal.Read(otherPath); err != nil || !journal.Replay(events).Done["x"] {
		t.Errorf("the glued line was not read: %v %+v", err, events)
	}
}
