package operator

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// TestNightStatusBelievesTheNewestEvidence: a server whose cache entry is
// a healthy probe but which the night journaled as lost afterwards is
// shown down; one the night saw before the cache's verdict is shown as
// the cache says.
func TestNightStatusBelievesTheNewestEvidence(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 30, 0, time.UTC)
	s := healthcheck.DefaultSettings()
	probed := s.MarkHealthy(nil, now.Add(-30*time.Second), healthcheck.RestoredByProbe)
	f := &healthcheck.File{Servers: map[string]*healthcheck.Entry{"notes": &probed, "web": &probed, "api": &probed}}
	events := []journal.Event{
		{Time: now.Add(-40 * time.Second), Type: journal.ServerState, Server: "web", Status: journal.Unhealthy, Code: "transport"},
		{Time: now.Add(-18 * time.Second), Type: journal.ServerLost, Server: "notes", Job: "a", Attempt: 1, Reason: "exited 3 times"},
		{Time: now.Add(-10 * time.Second), Type: journal.ServerState, Server: "api", Status: journal.Unhealthy, Code: "503", Reason: "HTTP 503"},
		{Time: now.Add(-5 * time.Second), Type: journal.ServerState, Server: "api", Status: ""}, // removed: no sighting
	}
	seen := Sightings(events)
	if len(seen) != 3 || !seen["notes"].Down || seen["api"].Code != healthcheck.CodeUnavailable {
		t.Fatalf("sightings %+v", seen)
	}
	rows := NightStatus(f, nil, s, now, seen)
	want := map[string]string{"api": "unhealthy", "notes": "unhealthy", "web": "healthy"}
	for _, r := range rows {
		if r.Status != want[r.Server] {
			t.Errorf("%s: %s, want %s", r.Server, r.Status, want[r.Server])
		}
		if r.Server == "notes" && (r.Gate != "block" || !strings.Contains(r.LastError, "lost under a attempt 1")) {
			t.Errorf("notes: gate %s, last error %q", r.Gate, r.LastError)
		}
	}
	if f.Servers["notes"].Status != healthcheck.StatusHealthy {
		t.Error("the cache file's entry was changed")
	}
}

func TestPrintNight(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 30, 0, 0, time.Local)
	lv := plan.Live{RunID: "r1", Batch: "nightly", Started: now.Add(-30 * time.Minute), Total: 4, Done: 1, Failed: 1,
		Running: []plan.LiveJob{{Name: "a", Attempt: 2, Elapsed: 95 * time.Second}},
		Waiting: []plan.LiveJob{{Name: "b", Why: "deferred: server notes is down\x1b[2J"}},
		CostUSD: 1.5, MaxCostUSD: 3,
		EndEstimate: now.Add(time.Hour), EndWhy: "2 job(s) left"}
	for _, tc := range []struct {
		name   string
		holder int
		mut    func(*plan.Live)
		want   []string
	}{
		{name: "running", holder: 42, want: []string{"night r1 of nightly", "running (pid 42)", "1 done, 1 failed, 0 skipped, 1 running, 1 waiting (of 4)",
			"$1.5000 of max_cost_usd $3.00 (50%)", "end: about 03:30:00 (2 job(s) left)", "1m35s", `server notes is down\x1b[2J`}},
		{name: "its supervisor is gone", want: []string{"not running: its supervisor is gone"}},
		{name: "ended", mut: func(lv *plan.Live) { lv.Ended = now }, want: []string{"ended 02:30:00", "1 done, 1 failed, 0 skipped, 2 unfinished (of 4)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := lv
			if tc.mut != nil {
				tc.mut(&l)
			}
			var out bytes.Buffer
			PrintNight(&out, l, tc.holder, now)
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("no %q in:\n%s", w, out.String())
				}
			}
			if strings.Contains(out.String(), "\x1b") {
				t.Errorf("a control character reached the terminal:\n%q", out.String())
			}
		})
	}
}
