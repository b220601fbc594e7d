package queue

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/riverqueue/river"
)

// A worker whose database goes away while it starts waits for it and then
// runs the queued attempt once: the database down before the worker
// registers, and the database lost during River's own Start (after the
// worker registered).
func TestWorkerStartWaitsForTheDatabase(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		step string // the step of the start that waited
		// prepare takes the database away at its point of the start.
		prepare func(*outageFixture) func(*Worker)
	}{
		{"down before the start", "register", func(f *outageFixture) func(*Worker) {
			f.pause()
			return nil
		}},
		{"lost during River's Start", "start River", func(f *outageFixture) func(*Worker) {
			var once sync.Once
			return func(w *Worker) {
				w.testStartRiver = func(ctx context.Context, c *river.Client[pgx.Tx]) error {
					once.Do(f.pause)
					return c.Start(ctx)
				}
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newOutageFixture(t)
			f.workerWith("host-a", c.prepare(f))
			f.waitFor("the start waits for the database at "+c.step, 60*time.Second, func() bool {
				f.mu.Lock()
				defer f.mu.Unlock()
				return f.waiting[c.step] > 0
			})
			f.resume()
			f.running()
			if err := os.WriteFile(filepath.Join(f.dir, "release"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			f.waitFor("the session ends", 30*time.Second, func() bool { return exists(filepath.Join(f.dir, "ended")) })
			ends := f.endsUntil(60*time.Second, some)
			_, reads := f.heard()
			f.waitFor("the coordinator reads twice more", 30*time.Second, func() bool { _, r := f.heard(); return r >= reads+2 })
			ends, _ = f.heard()
			f.wantWorkersEnd(ends, "host-a")
			var started int
			if err := f.db.Pool.QueryRow(context.Background(),
				"SELECT count(*) FROM nightwatch_attempts WHERE job = 'j' AND started_at IS NOT NULL").Scan(&started); err != nil || started != 1 {
				t.Errorf("%d attempts of j started (%v), want 1", started, err)
			}
		})
	}
}

// A call an attempt's hook records in its host's ledger is shared while
// the attempt still runs (a worker that then dies has shared it), once,
// and the attempt's end adds nothing twice.
func TestWorkerSharesSideEffectsWhileTheAttemptRuns(t *testing.T) {
	t.Parallel()
	f := newOutageFixture(t)
	f.worker("host-a")
	f.running()
	path := statedir.Effects(f.b.StateDir, "run-1", "j")
	if _, err := effects.Record(path, 1, "notes", "append", effects.Input{Raw: []byte(`{"line":"a"}`)}, time.Now()); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := f.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM nightwatch_effects WHERE job = 'j' AND attempt = 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	f.waitFor("the call is shared while the attempt runs", 30*time.Second, func() bool { return count() == 1 })
	if s, _ := f.c.State(context.Background(), "j", 1); s != "running" {
		t.Fatalf("the attempt is %q, want still running when its call is shared", s)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.wantWorkersEnd(f.endsUntil(60*time.Second, some), "host-a")
	calls, err := f.db.Effects(context.Background(), "run-1", "j")
	if err != nil || len(calls) != 1 || calls[0].Server != "notes" || calls[0].Tool != "append" || calls[0].Key != effects.Key([]byte(`{"line":"a"}`)) {
		t.Errorf("shared calls %+v (%v), want the one call once", calls, err)
	}
}
