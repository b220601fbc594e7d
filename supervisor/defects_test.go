package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/report"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// initAgent is an agent whose stream's init event says server has status,
// then succeeds: what Claude Code prints when it could not connect to a
// server the night's preflight found healthy.
func initAgent(t *testing.T, dir, server, status string) string {
	path := filepath.Join(dir, "agent")
	script := fmt.Sprintf(`#!/bin/sh
echo '{"type":"system","subtype":"init","session_id":"s1","mcp_servers":[{"name":"%s","status":"%s","source":"dynamic"}]}'
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0.01,"session_id":"s1"}'
`, server, status)
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// Regression: an outage the stream's init event reports (a server failed
// or needs-auth) was written straight into the cache, bypassing the events
// file and the journal, so the morning report never showed it. Now the
// Checker records it, and it reaches the journal and the report.
func TestInitOutageReachesTheJournalAndTheReport(t *testing.T) {
	server := testkit.BuildTestServer(t)
	for _, tc := range []struct {
		status  string
		code    healthcheck.FailureCode
		outages int
	}{
		// The probe finds the stdio server healthy between attempts, so
		// each attempt's init failure is an outage of its own.
		{"failed", healthcheck.CodeTransport, plan.MaxBounces + 1},
		// Only a real call can clear a needs-auth outage (the probe has no
		// OAuth token), and no session makes one: one outage, all night.
		{"needs-auth", healthcheck.CodeAuth, 1},
	} {
		t.Run(tc.status, func(t *testing.T) {
			dir := t.TempDir()
			// A needs-auth outage is one only calls can witness (the probe
			// has no OAuth token): the job comes back as the trial after
			// the backoff, kept short here.
			yaml := fmt.Sprintf("version: 1\nname: init\nstate_dir: ./state\nagent: {command: %s}\n"+
				"health: {backoff: 1s, max_backoff: 2s}\n"+
				"servers:\n  notes: {command: %s}\njobs:\n  - {name: a, servers: [notes], prompt: a}\n",
				jsonString(initAgent(t, dir, "notes", tc.status)), jsonString(server))
			b := testkit.LoadBatch(t, dir, yaml)
			s := runScripted(t, b, nil)

			events, err := journal.Read(s.Journal)
			if err != nil {
				t.Fatal(err)
			}
			var outage *journal.Event
			for i, ev := range events {
				if ev.Type == journal.ServerState && ev.Server == "notes" && ev.Status == journal.Unhealthy {
					outage = &events[i]
				}
			}
			if outage == nil {
				t.Fatalf("no unhealthy server-state line for notes in the journal:\n%+v", events)
			}
			if outage.Code != string(tc.code) || !strings.Contains(outage.Reason, "Claude Code reported") ||
				!strings.Contains(outage.Reason, "job a") {
				t.Errorf("outage line = %+v, want code %s and who saw it", outage, tc.code)
			}
			f, err := (&healthcheck.Store{Path: statedir.Cache(b.StateDir)}).Read()
			if err != nil {
				t.Fatal(err)
			}
			if e := f.Entry("notes"); e == nil || e.Status != healthcheck.StatusUnhealthy || e.LastFailureCode != tc.code {
				t.Errorf("cache entry = %+v, want unhealthy %s", e, tc.code)
			}
			night, err := report.Build(s.Journal, "")
			if err != nil {
				t.Fatal(err)
			}
			// The agent says so on every attempt: the job is never done
			// and fails after plan.MaxBounces stopped attempts.
			if night.Totals.Outages != tc.outages {
				t.Errorf("the report shows %d outages, want %d: %+v", night.Totals.Outages, tc.outages, night.Servers)
			}
			if s.Done != 0 || s.Jobs[0].Status != StatusFailed || !strings.Contains(s.Jobs[0].Reason, "could not use") {
				t.Errorf("job a = %+v, want failed: it could not use its server", s.Jobs[0])
			}
		})
	}
}

// A server that flaps: each session finds it failed at its start, and the
// night's next probe finds it down too (an outage, confirmed), then up.
// Those bounces do not count towards plan.MaxBounces: the job runs again
// each time the server is back and is done at its sixth attempt, where a
// server that only sessions cannot use fails it at the fourth
// (TestInitOutageReachesTheJournalAndTheReport).
func TestFlappingServerBouncesDoNotFailTheJob(t *testing.T) {
	server := testkit.BuildTestServer(t)
	dir := t.TempDir()
	mark, count := filepath.Join(dir, "down-once"), filepath.Join(dir, "attempts")
	// The server is down for exactly one probe after each bounce: a probe
	// starts a stdio server twice when the first exits (server/discover,
	// then the legacy initialize), so the mark holds two failed starts.
	wrapper := filepath.Join(dir, "server")
	if err := os.WriteFile(wrapper, []byte(fmt.Sprintf(`#!/bin/sh
if [ -e %[1]s ]; then
  if [ "$(cat %[1]s)" = 2 ]; then echo 1 > %[1]s; else rm -f %[1]s; fi
  echo down >&2; exit 1
fi
exec %[2]s "$@"
`, jsonString(mark), jsonString(server))), 0o700); err != nil {
		t.Fatal(err)
	}
	const bounces = plan.MaxBounces + 2
	agent := filepath.Join(dir, "agent")
	if err := os.WriteFile(agent, []byte(fmt.Sprintf(`#!/bin/sh
case "$1" in auth|--version) exit 0;; esac
n=$(cat %[1]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s
status=connected
if [ $n -le %[3]d ]; then status=failed; echo 2 > %[2]s; fi
echo '{"type":"system","subtype":"init","session_id":"s1","mcp_servers":[{"name":"notes","status":"'$status'","source":"dynamic"}]}'
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0.01,"session_id":"s1"}'
`, jsonString(count), jsonString(mark), bounces)), 0o700); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf("version: 1\nname: flap\nstate_dir: ./state\nagent: {command: %s}\n"+
		"health: {backoff: 1s, max_backoff: 2s}\n"+
		"servers:\n  notes: {command: %s}\njobs:\n  - {name: a, servers: [notes], prompt: a}\n",
		jsonString(agent), jsonString(wrapper))
	b := testkit.LoadBatch(t, dir, yaml)
	s := runScripted(t, b, nil)
	events, err := journal.Read(s.Journal)
	if err != nil {
		t.Fatal(err)
	}
	var confirmed []int
	for _, ev := range events {
		if ev.Type == journal.OutageConfirmed {
			if ev.Job != "a" || ev.Server != "notes" || !strings.Contains(ev.Reason, "found notes down") {
				t.Errorf("outage-confirmed line = %+v", ev)
			}
			confirmed = append(confirmed, ev.Attempt)
		}
	}
	if want := []int{1, 2, 3, 4, 5}; !slices.Equal(confirmed, want) {
		t.Errorf("outages confirmed after attempts %v, want %v", confirmed, want)
	}
	if j := jobResult(s, "a"); j.Status != StatusDone || j.Attempts != bounces+1 {
		t.Errorf("job a = %+v, want done at attempt %d", j, bounces+1)
	}
	// The morning report says which stops were outages.
	night, err := report.Build(s.Journal, "")
	if err != nil {
		t.Fatal(err)
	}
	outages := 0
	for _, j := range night.Jobs {
		for _, d := range j.Deferrals {
			if strings.Contains(d.Reason, "could not be used") && strings.Contains(d.Reason, "; an outage: the night's probe found notes down") {
				outages++
			}
		}
	}
	if outages != bounces {
		t.Errorf("the report says %d of the job's stops were outages, want %d", outages, bounces)
	}
}

// Regression: maintenance decided reachability with its own rule and
// recorded it with the Checker's: a 401 to a probe that carried the
// server's own token was journaled as "answered again" (healthy) while the
// cache stored a failure. Maintenance now judges by the Checker's rule: a
// server still down by it is left as it is, and the journal says what the
// Checker recorded.
func TestMaintenanceJournalsTheCheckersVerdict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		healthy bool
	}{
		{"401 to the server's own token", http.StatusUnauthorized, false},
		{"answers", http.StatusOK, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.status != http.StatusOK {
					w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
					w.WriteHeader(tc.status)
					return
				}
				// A legacy server: it knows no server/discover, answers
				// initialize with the request's own id, and accepts
				// notifications.
				var req struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				_ = json.NewDecoder(r.Body).Decode(&req)
				if len(req.ID) == 0 {
					w.WriteHeader(http.StatusAccepted)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				if req.Method != "initialize" {
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
					return
				}
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"t","version":"1"}}}`, req.ID)
			}))
			defer api.Close()
			dir := t.TempDir()
			b := testkit.LoadBatch(t, dir, fmt.Sprintf("version: 1\nname: maint\nstate_dir: ./state\nagent: {command: /bin/true}\n"+
				"servers:\n  api: {type: http, url: %s, headers: {Authorization: \"Bearer own-token\"}}\n"+
				"jobs:\n  - {name: a, servers: [api], prompt: a}\n", jsonString(api.URL+"/mcp")))
			if err := os.MkdirAll(b.StateDir, 0o700); err != nil {
				t.Fatal(err)
			}
			n := newNight(b, NightOptions{Env: os.Environ(), LogWriter: zerolog.NewTestWriter(t)})
			if _, err := n.openJournal(); err != nil {
				t.Fatal(err)
			}
			// api is down with its retry far away, and job a waits for it:
			// maintenance probes it early.
			now := time.Now()
			if err := n.store.Update(func(f *healthcheck.File) error {
				e := n.checker.Settings.MarkUnhealthy(nil, now, healthcheck.Failure{Code: healthcheck.CodeAuth, Reason: "401"})
				e.NextRetryAt = healthcheck.MillisOf(now.Add(time.Hour))
				f.Servers["api"] = &e
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			n.plan.Apply(journal.Event{Type: journal.JobDeferred, Job: "a", Time: now, Reason: "server api is down"})
			n.maintain(context.Background())

			f, err := n.store.Read()
			if err != nil {
				t.Fatal(err)
			}
			stored := f.Entry("api")
			events, err := journal.Read(n.journal.Path)
			if err != nil {
				t.Fatal(err)
			}
			var maint *journal.Event
			for i, ev := range events {
				if ev.Type == journal.Maintenance && ev.Server == "api" {
					maint = &events[i]
				}
			}
			if !tc.healthy {
				// Still down by the health check's rule: nothing is
				// recorded (the hooks' backoff does not grow) and nothing
				// says it answered.
				if maint != nil || stored.Status != healthcheck.StatusUnhealthy || stored.FailureCount != 1 {
					t.Errorf("maintenance line %+v, cache %+v; want none, and the entry unhealthy as it was", maint, stored)
				}
				return
			}
			if maint == nil {
				t.Fatalf("no maintenance line for api: %+v", events)
			}
			if maint.Status != journal.Healthy || stored.Status != healthcheck.StatusHealthy {
				t.Errorf("journal says %s (%q), cache says %s; want both healthy", maint.Status, maint.Reason, stored.Status)
			}
		})
	}
}
