//go:build !windows

package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/cluster/queue"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A coordinator lost its database mid-night: its journal file has a job's
// end that the shared journal lacks. The next `run` on that host gives the
// shared journal the missing lines before it resumes, so the finished job
// does not run again.
func TestClusterResumeCatchesUpTheSharedJournal(t *testing.T) {
	dsn := pgtest.New(t)
	ctx := context.Background()
	dir := t.TempDir()
	agent := filepath.Join(dir, "fake-claude")
	script := "#!/bin/sh\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"num_turns\":1,\"total_cost_usd\":0,\"session_id\":\"s\"}'\n"
	if err := os.WriteFile(agent, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "night.yaml")
	yaml := fmt.Sprintf("version: 1\nname: catchup\nstate_dir: ./state\nkeep_awake: false\ncluster: {database_env: NW_PG}\nagent: {command: %s}\njobs:\n  - {name: j1, prompt: one}\n  - {name: j2, prompt: two}\n", agent)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) (string, bool) {
		if k == "NW_PG" {
			return dsn, true
		}
		return os.LookupEnv(k)
	}
	b, err := jobs.Load(path, getenv)
	if err != nil {
		t.Fatal(err)
	}
	db, err := clusterdb.Open(ctx, dsn, b.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// The dead night: both journals have its start and j1's start; only
	// the file has j1's end.
	run := journal.NewRunID(time.Now())
	j, err := journal.Create(b.StateDir, run)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	both := []journal.Event{
		{Type: journal.RunStarted, Run: run, Time: now, Batch: b.Name, BatchFile: b.File, Host: "here"},
		{Type: journal.JobStarted, Run: run, Time: now, Job: "j1", Attempt: 1},
	}
	fileOnly := journal.Event{Type: journal.JobFinished, Run: run, Time: now, Job: "j1", Attempt: 1, Status: journal.Done,
		Result: &journal.Result{Subtype: "success", NumTurns: 1}}
	for _, ev := range both {
		if err := j.Append(ev); err != nil {
			t.Fatal(err)
		}
		if err := db.AppendJournal(ctx, "here", ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Append(fileOnly); err != nil {
		t.Fatal(err)
	}

	env := append(os.Environ(), "NW_PG="+dsn)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- queue.Serve(wctx, b, queue.ServeOptions{Binary: "/bin/true", Env: env, Host: "worker", Log: zerolog.Nop()})
	}()
	defer func() { stop(); <-done }()
	nctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	s, err := RunNight(nctx, b, NightOptions{Binary: "/bin/true", Env: env, LogWriter: zerolog.NewTestWriter(t)})
	if err != nil || !s.Resumed || s.Done != 2 {
		t.Fatalf("night: %v resumed %v, %+v; want the resumed night with both jobs done", err, s != nil && s.Resumed, s)
	}
	evs, err := db.RunEvents(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	starts := map[string]int{}
	var j1Done int
	for _, ev := range evs {
		if ev.Type == journal.JobStarted {
			starts[ev.Job]++
		}
		if ev.Type == journal.JobFinished && ev.Job == "j1" && ev.Status == journal.Done {
			j1Done++
		}
	}
	if starts["j1"] != 1 || j1Done != 1 || starts["j2"] != 1 {
		t.Errorf("shared journal: j1 started %d and done %d times, j2 started %d times; want 1, 1, 1", starts["j1"], j1Done, starts["j2"])
	}
}
