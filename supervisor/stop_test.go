package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/session"
)

// A night is stopped (SIGTERM, the daemon's shutdown) while the end of an
// attempt that finished done waits in the loop's inbox: the stop path
// journals that end, and the next `run` resumes with the job done and
// runs it no more. Before, the stop path told the plan and dropped what it
// returned: the journal held the job running and the next run ran it again.
func TestStopJournalsAnEndAlreadyInTheInbox(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent")
	ran := filepath.Join(dir, "ran")
	script := fmt.Sprintf("#!/bin/sh\necho \"$2\" >> %s\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"num_turns\":1,\"total_cost_usd\":0,\"session_id\":\"s\"}'\n", ran)
	if err := os.WriteFile(agent, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	b := testkit.LoadBatch(t, dir, fmt.Sprintf("version: 1\nname: stop\nstate_dir: ./state\nkeep_awake: false\nagent: {command: %s}\njobs:\n  - {name: a, prompt: a}\n", agent))
	opts := NightOptions{Binary: "/bin/true", Env: os.Environ(), LogWriter: zerolog.NewTestWriter(t),
		Maintenance: 200 * time.Millisecond, RetryPause: 100 * time.Millisecond, SkipPreflight: true}
	if err := os.MkdirAll(b.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}

	// The stopped night: a's attempt ran and ended done; its end is in
	// the inbox when the stop comes.
	n := newNight(b, opts)
	if _, err := n.openJournal(); err != nil {
		t.Fatal(err)
	}
	n.exec = newLocalExecutor(b, n.runID, opts.Binary, opts.Env, n.inbox)
	now := n.now()
	n.plan.Adopt("a", 1, now)
	n.append(journal.Event{Type: journal.JobStarted, Job: "a", Attempt: 1})
	n.inbox <- endedMessage("a", 1, session.Outcome{Status: session.Done, NumTurns: 1, SessionID: "s", Started: now, Ended: now})
	n.stop()
	events := readJournalTypes(t, n.journal.Path)
	finished := 0
	for _, ev := range events {
		if ev.Type == journal.JobFinished && ev.Job == "a" {
			finished++
			if ev.Status != journal.Done {
				t.Errorf("a's end is journaled %s, want done", ev.Status)
			}
		}
	}
	if finished != 1 {
		t.Fatalf("a's end is journaled %d times, want once: %+v", finished, events)
	}

	// The next run resumes the night and runs nothing again.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := RunNight(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Resumed || s.Done != 1 {
		t.Errorf("the next run: resumed %v, %+v", s.Resumed, s.Jobs)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the next run ran a again")
	}
}

// endedMessage is the end of attempt of job, as an executor delivers it.
func endedMessage(job string, attempt int, out session.Outcome) session.Report {
	return session.Report{Ended: &session.Ended{Job: job, Attempt: attempt, Outcome: out}}
}
