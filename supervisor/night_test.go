package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/internal/batchlock"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// The night's rules with a scripted agent (a shell script standing in for
// claude) and real MCP test servers: fast, and every branch reachable.

// scriptedAgent writes an agent that reports cost, and fails its first
// run of a job when fail-first is in the prompt.
func scriptedAgent(t *testing.T, dir string, cost string) string {
	path := filepath.Join(dir, "agent")
	script := fmt.Sprintf(`#!/bin/sh
# $2 is the prompt (claude -p <prompt> …).
marker="%s/ran-$(printf '%%s' "$2" | cksum | cut -d' ' -f1)"
if printf '%%s' "$2" | grep -q fail-first && [ ! -e "$marker" ]; then
  : > "$marker"
  echo '{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,"total_cost_usd":%s}'
  exit 1
fi
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":%s,"session_id":"s"}'
`, dir, cost, cost)
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func runScripted(t *testing.T, b *jobs.Batch, now func() time.Time) *NightSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := RunNight(ctx, b, NightOptions{Binary: "/bin/true", Env: os.Environ(),
		LogWriter: zerolog.NewTestWriter(t), Maintenance: 200 * time.Millisecond,
		RetryPause: 100 * time.Millisecond, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func jobResult(s *NightSummary, name string) plan.JobResult {
	for _, j := range s.Jobs {
		if j.Name == name {
			return j
		}
	}
	return plan.JobResult{}
}

func TestNightRules(t *testing.T) {
	server := testkit.BuildTestServer(t)
	tests := []struct {
		name  string
		cost  string
		body  string // servers and jobs
		now   func() func() time.Time
		check func(t *testing.T, s *NightSummary)
	}{
		{
			name: "skip when the server is down, and the jobs that need it",
			body: `servers:
  up: {command: SERVER}
  down: {command: SERVER, args: ["--mode", "exit-at-start"]}
jobs:
  - {name: a, servers: [down], on_unhealthy: skip, prompt: a}
  - {name: b, servers: [up], needs: [a], prompt: b}
  - {name: c, servers: [up], prompt: c}
`,
			check: func(t *testing.T, s *NightSummary) {
				if r := jobResult(s, "a"); r.Status != StatusSkipped || !strings.Contains(r.Reason, "server down is down since") ||
					!strings.Contains(r.Reason, "exit-at-start") {
					t.Errorf("a: %+v", r)
				}
				if r := jobResult(s, "b"); r.Status != StatusSkipped || !strings.Contains(r.Reason, "needs a, which was skipped") {
					t.Errorf("b: %+v", r)
				}
				if r := jobResult(s, "c"); r.Status != StatusDone || r.Attempts != 1 {
					t.Errorf("c: %+v", r)
				}
			},
		},
		{
			name: "run anyway",
			body: `servers:
  down: {command: SERVER, args: ["--mode", "exit-at-start"]}
jobs:
  - {name: a, servers: [down], on_unhealthy: run, prompt: a}
`,
			check: func(t *testing.T, s *NightSummary) {
				if r := jobResult(s, "a"); r.Status != StatusDone {
					t.Errorf("a: %+v", r)
				}
			},
		},
		{
			name: "a failed attempt is retried",
			body: `servers:
  up: {command: SERVER}
jobs:
  - {name: a, servers: [up], retries: 1, prompt: fail-first}
  - {name: b, servers: [up], retries: 0, prompt: "fail-first too"}
`,
			check: func(t *testing.T, s *NightSummary) {
				if r := jobResult(s, "a"); r.Status != StatusDone || r.Attempts != 2 {
					t.Errorf("a: %+v", r)
				}
				if r := jobResult(s, "b"); r.Status != StatusFailed || r.Attempts != 1 || !strings.Contains(r.Reason, "error_max_turns") {
					t.Errorf("b: %+v", r)
				}
			},
		},
		{
			name: "max_cost_usd stops new jobs",
			cost: "3.5",
			body: `max_cost_usd: 5
servers:
  up: {command: SERVER}
jobs:
  - {name: a, servers: [up], prompt: a}
  - {name: b, servers: [up], prompt: b}
  - {name: c, servers: [up], prompt: c}
`,
			check: func(t *testing.T, s *NightSummary) {
				if s.Done != 2 || jobResult(s, "c").Status != StatusSkipped ||
					!strings.Contains(jobResult(s, "c").Reason, "max_cost_usd reached: $7.00 of $5.00") {
					t.Errorf("%+v", s.Jobs)
				}
			},
		},
		{
			name: "a job that waits too long is skipped with what it waited for",
			body: `defaults: {max_defer: 1s}
servers:
  down: {command: SERVER, args: ["--mode", "exit-at-start"]}
jobs:
  - {name: a, servers: [down], prompt: a}
`,
			check: func(t *testing.T, s *NightSummary) {
				if r := jobResult(s, "a"); r.Status != StatusSkipped || r.Deferrals != 1 ||
					!strings.Contains(r.Reason, "waited 1s for its servers: server down is down since") {
					t.Errorf("a: %+v", r)
				}
			},
		},
		{
			name: "no job starts after the deadline",
			body: `deadline: "07:00"
servers:
  up: {command: SERVER}
jobs:
  - {name: a, servers: [up], prompt: a}
  - {name: b, servers: [up], needs: [a], prompt: b}
`,
			// The run starts at 06:59:59; every later reading of the
			// clock is past 07:00, so b, due after a, is past the deadline.
			now: func() func() time.Time {
				var calls atomic.Int32
				start := time.Date(2026, 12, 1, 6, 59, 59, 0, time.Local)
				return func() time.Time {
					if calls.Add(1) <= 3 {
						return start
					}
					return start.Add(2 * time.Second)
				}
			},
			check: func(t *testing.T, s *NightSummary) {
				if r := jobResult(s, "b"); r.Status != StatusSkipped || !strings.Contains(r.Reason, "deadline 07:00 passed") {
					t.Errorf("b: %+v (a: %+v)", r, jobResult(s, "a"))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cost := tt.cost
			if cost == "" {
				cost = "0.01"
			}
			yaml := fmt.Sprintf("version: 1\nname: rules\nstate_dir: ./state\nagent: {command: %s}\nhealth: {backoff: 1s, max_backoff: 2s}\n",
				jsonString(scriptedAgent(t, dir, cost))) + strings.ReplaceAll(tt.body, "SERVER", jsonString(server))
			var now func() time.Time
			if tt.now != nil {
				now = tt.now()
			}
			s := runScripted(t, testkit.LoadBatch(t, dir, yaml), now)
			tt.check(t, s)
		})
	}
}

func TestSecondRunOfABatchIsRefused(t *testing.T) {
	dir := t.TempDir()
	b := testkit.LoadBatch(t, dir, fmt.Sprintf("version: 1\nname: locked\nstate_dir: ./state\nagent: {command: %s}\njobs:\n  - {name: a, prompt: a}\n",
		jsonString(scriptedAgent(t, dir, "0"))))
	if err := os.MkdirAll(b.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	unlock, err := batchlock.Take(b.StateDir, b.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	_, err = RunNight(context.Background(), b, NightOptions{Binary: "/bin/true", Env: os.Environ()})
	if err == nil || !strings.Contains(err.Error(), "locked") && !strings.Contains(err.Error(), "lock") {
		t.Fatalf("want the lock refused, got %v", err)
	}
}

func TestProgressIsReported(t *testing.T) {
	dir := t.TempDir()
	b := testkit.LoadBatch(t, dir, fmt.Sprintf("version: 1\nname: progress\nstate_dir: ./state\nagent: {command: %s}\njobs:\n  - {name: a, prompt: a}\n  - {name: b, prompt: b, needs: [a]}\n",
		jsonString(scriptedAgent(t, dir, "0"))))
	var seen []plan.Progress
	_, err := RunNight(context.Background(), b, NightOptions{Binary: "/bin/true", Env: os.Environ(),
		Progress: func(p plan.Progress) { seen = append(seen, p) }})
	if err != nil {
		t.Fatal(err)
	}
	sawRunning := false
	for _, p := range seen {
		if len(p.Running) == 1 && strings.HasPrefix(p.Running[0], "a (attempt 1") {
			sawRunning = true
		}
	}
	last := seen[len(seen)-1]
	if !sawRunning || last.Done != 2 || last.Total != 2 {
		t.Fatalf("progress: running seen %v, last %+v", sawRunning, last)
	}
}

func TestNotifyAtTheEndOfTheNight(t *testing.T) {
	dir := t.TempDir()
	var got atomic.Value
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Text string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		got.Store(body.Text)
	}))
	defer hook.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer broken.Close()
	received := filepath.Join(dir, "received")
	sink := filepath.Join(dir, "sink.sh")
	if err := os.WriteFile(sink, []byte("#!/bin/sh\ncat > \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, url string }{{"ok", hook.URL}, {"webhook fails", broken.URL}} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			b := testkit.LoadBatch(t, d, fmt.Sprintf("version: 1\nname: notified\nstate_dir: ./state\nagent: {command: %s}\n"+
				"notify: {webhook: %s, command: [%s, %s]}\njobs:\n  - {name: a, prompt: a}\n",
				jsonString(scriptedAgent(t, d, "0.25")), jsonString(tc.url), jsonString(sink), jsonString(received)))
			s := runScripted(t, b, nil)
			if !s.AllDone() {
				t.Fatalf("a notification must never fail the night: %+v", s)
			}
			data, _ := os.ReadFile(received)
			if !strings.Contains(string(data), "batch notified finished") || !strings.Contains(string(data), "1 done, 0 failed") {
				t.Errorf("command got %q", data)
			}
			events, _ := journal.Read(s.Journal)
			failed := 0
			for _, ev := range events {
				if ev.Type == journal.NotifyFailed {
					failed++
				}
			}
			if tc.url == hook.URL {
				if text, _ := got.Load().(string); !strings.Contains(text, "batch notified finished") || failed != 0 {
					t.Errorf("webhook got %q, %d failures journaled", text, failed)
				}
			} else if failed != 1 {
				t.Errorf("a failing webhook must be journaled once, got %d", failed)
			}
		})
	}
}
