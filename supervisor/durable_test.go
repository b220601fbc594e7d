package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/session"
)

// syncChecking is an executor that notes, as each attempt starts (after
// the night wrote its job-started line, before the agent is spawned), how
// many journal lines still wait for their fsync.
type syncChecking struct {
	executor
	j       *journal.Journal
	atStart []int
}

func (e *syncChecking) Launch(ctx context.Context, a session.Attempt, starting func(session.Starting) bool) (bool, error) {
	return e.executor.Launch(ctx, a, func(s session.Starting) bool {
		ok := starting(s)
		if ok {
			e.atStart = append(e.atStart, e.j.Unsynced())
		}
		return ok
	})
}

// The night's journal lines are fsynced in batches, never late: when an
// attempt's agent is spawned every line written so far (its job-started
// line, the end of the attempt before it) is durable, and so is every
// line when the night returns. One after the other, an instant job costs
// one fsync (its start, which carries the previous job's end), not one
// per line.
func TestNightJournalIsDurableBeforeEachStart(t *testing.T) {
	tests := []struct {
		name        string
		maxParallel int
		// maxExtra bounds the fsyncs beyond one per attempt (-1: not
		// counted): the run's first lines, the last job's end, and a
		// turn that ends an attempt and starts none (the retry's pause).
		maxExtra int
	}{
		{"one at a time", 1, 3},
		{"two at a time", 2, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			agent := scriptedAgent(t, dir, "0")
			var yaml strings.Builder
			fmt.Fprintf(&yaml, "version: 1\nname: durable\nstate_dir: ./state\nkeep_awake: false\nmax_parallel: %d\nagent: {command: %s}\njobs:\n",
				tt.maxParallel, jsonString(agent))
			const jobs = 6
			for i := 0; i < jobs; i++ {
				prompt := fmt.Sprintf("p%d", i)
				if i == 2 {
					prompt += " fail-first"
				}
				fmt.Fprintf(&yaml, "  - {name: j%d, retries: 1, prompt: %q}\n", i, prompt)
			}
			b := testkit.LoadBatch(t, dir, yaml.String())
			if err := os.MkdirAll(b.StateDir, 0o700); err != nil {
				t.Fatal(err)
			}
			opts := NightOptions{Binary: "/bin/true", Env: os.Environ(), LogWriter: zerolog.NewTestWriter(t),
				Maintenance: 200 * time.Millisecond, RetryPause: 100 * time.Millisecond, SkipPreflight: true,
				CheckAPI: func(context.Context) (bool, string) { return true, "" }}
			// RunNight's start, with an executor that looks at the journal.
			n := newNight(b, opts)
			if _, err := n.openJournal(); err != nil {
				t.Fatal(err)
			}
			n.syncJournal()
			exec := &syncChecking{executor: newLocalExecutor(b, n.runID, opts.Binary, opts.Env, n.inbox), j: n.journal}
			n.exec = exec
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := n.loop(ctx); err != nil {
				t.Fatal(err)
			}
			_, done, _, _ := n.plan.Summary()
			if done != jobs {
				t.Fatalf("%d of %d jobs done", done, jobs)
			}
			const attempts = jobs + 1 // the fail-first job's retry
			if len(exec.atStart) != attempts {
				t.Fatalf("%d attempts started, want %d", len(exec.atStart), attempts)
			}
			for i, u := range exec.atStart {
				if u != 0 {
					t.Errorf("attempt %d was spawned with %d journal line(s) not yet durable", i+1, u)
				}
			}
			if u := n.journal.Unsynced(); u != 0 {
				t.Errorf("the night returned with %d journal line(s) not yet durable", u)
			}
			finished := 0
			for _, ev := range readJournalTypes(t, n.journal.Path) {
				if ev.Type == journal.JobFinished {
					finished++
				}
			}
			if finished != jobs {
				t.Errorf("the journal has %d job-finished lines, want %d", finished, jobs)
			}
			if f := n.journal.Fsyncs(); tt.maxExtra >= 0 && f > attempts+tt.maxExtra {
				t.Errorf("%d fsyncs for %d attempts, want at most %d", f, attempts, attempts+tt.maxExtra)
			}
			t.Logf("%d fsyncs for %d attempts", n.journal.Fsyncs(), attempts)
		})
	}
}

// The local executor's session opens its logs while the night writes the
// attempt's job-started line and fsyncs it (starting), and spawns the
// agent only once starting said yes: refused, nothing is spawned and no
// end is reported; allowed, the attempt runs and its end comes back.
func TestLocalExecutorSpawnsOnlyOnceStartingSaidYes(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "spawned")
	agent := filepath.Join(dir, "agent")
	script := "#!/bin/sh\necho \"$@\" >> " + text.ShellQuote(marker) + "\n" +
		`echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0,"session_id":"s"}'` + "\n"
	if err := os.WriteFile(agent, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	b := testkit.LoadBatch(t, dir, fmt.Sprintf("version: 1\nname: gate\nstate_dir: ./state\nkeep_awake: false\nagent: {command: %s}\njobs:\n  - {name: j, prompt: hello}\n", jsonString(agent)))
	reports := make(chan session.Report, 16)
	e := newLocalExecutor(b, "20260101T020000Z-0000", "/bin/true", os.Environ(), reports)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	started, err := e.Launch(ctx, session.Attempt{Job: "j", Attempt: 1}, func(s session.Starting) bool {
		// Refused once the session is at its gate: its stream log is open
		// (the stderr log is made on the first byte only).
		stream := filepath.Join(s.Folder, statedir.AttemptStream)
		for {
			if _, err := os.Lstat(stream); err == nil {
				return false
			}
			if ctx.Err() != nil {
				t.Error("the session did not open its logs while the job-started line was written")
				return false
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	if started || err != nil {
		t.Fatalf("refused attempt: started %v, %v", started, err)
	}
	if b, err := os.ReadFile(marker); !os.IsNotExist(err) {
		t.Errorf("the refused attempt's agent ran: %q %v", b, err)
	}
	if len(reports) != 0 {
		t.Errorf("the refused attempt reported %+v", <-reports)
	}

	started, err = e.Launch(ctx, session.Attempt{Job: "j", Attempt: 2}, func(session.Starting) bool { return true })
	if !started || err != nil {
		t.Fatalf("allowed attempt: started %v, %v", started, err)
	}
	for r := range reports {
		if r.Ended != nil {
			if r.Ended.Attempt != 2 || r.Ended.Outcome.Status != session.Done {
				t.Errorf("end %+v", r.Ended)
			}
			break
		}
	}
	if b, err := os.ReadFile(marker); err != nil || strings.Count(string(b), "\n") != 1 {
		t.Errorf("the allowed attempt's agent ran %q (%v), want once", b, err)
	}
}

// The attempt's files are prepared while its start is journaled: a
// preparation that fails after that (here a symlink planted where the
// job's folder goes) is the attempt's end, reported as any other, and
// nothing is spawned; the job-started line was told the attempt's folder
// before the folder was made.
func TestLocalExecutorPreparesWhileStarting(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "spawned")
	agent := filepath.Join(dir, "agent")
	script := "#!/bin/sh\ntouch " + text.ShellQuote(marker) + "\n"
	if err := os.WriteFile(agent, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	b := testkit.LoadBatch(t, dir, fmt.Sprintf("version: 1\nname: prep\nstate_dir: ./state\nkeep_awake: false\nagent: {command: %s}\njobs:\n  - {name: j, prompt: hello}\n", jsonString(agent)))
	const run = "20260101T020000Z-0000"
	elsewhere := t.TempDir()
	if err := os.MkdirAll(filepath.Join(statedir.Runs(b.StateDir), run), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(filepath.Join(statedir.Runs(b.StateDir), run), "j")); err != nil {
		t.Fatal(err)
	}
	reports := make(chan session.Report, 16)
	e := newLocalExecutor(b, run, "/bin/true", os.Environ(), reports)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var folder string
	started, err := e.Launch(ctx, session.Attempt{Job: "j", Attempt: 1}, func(s session.Starting) bool {
		folder = s.Folder
		return true
	})
	if !started || err != nil {
		t.Fatalf("started %v, %v; want the failure as the attempt's end", started, err)
	}
	if want := statedir.Attempt(b.StateDir, run, "j", 1); folder != want {
		t.Errorf("the job-started line's folder %q, want %q", folder, want)
	}
	r := <-reports
	if r.Ended == nil || r.Ended.Outcome.Status != session.Failed || !strings.Contains(r.Ended.Outcome.Reason, "cannot prepare the session") ||
		!strings.Contains(r.Ended.Outcome.Reason, "symlink") {
		t.Fatalf("report %+v, want the attempt's end: cannot prepare", r)
	}
	if _, err := os.Lstat(marker); !os.IsNotExist(err) {
		t.Errorf("the agent ran: %v", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("written through the symlink: %v", entries)
	}
}
