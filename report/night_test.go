package report

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
)

// A journal of this release, recorded: a server down at preflight, a job
// deferred for it, a job denied its tools, a verify that failed then
// passed, an attempt stopped because its server failed at init, and the
// servers' states at the end.
func TestReportTellsTheWholeNight(t *testing.T) {
	path := filepath.Join("testdata", "done-means-done.jsonl")
	// A cache that says otherwise: the report must not read it when the
	// journal has the end-of-night states.
	cache := filepath.Join(t.TempDir(), "cache.json")
	st := &healthcheck.Store{Path: cache}
	if err := st.Update(func(f *healthcheck.File) error {
		f.Servers["memory"] = &healthcheck.Entry{Status: healthcheck.StatusHealthy}
		f.Servers["web"] = &healthcheck.Entry{Status: healthcheck.StatusUnhealthy}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	n, err := Build(path, cache)
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]Job{}
	for _, j := range n.Jobs {
		jobs[j.Name] = j
	}
	for _, tc := range []struct {
		job, status string
		denied      []string
		unusable    []string
		verified    bool
		verifyOK    *bool
	}{
		{job: "fetch", status: "done", verified: true, verifyOK: ptr(true)},
		{job: "locked", status: "failed", denied: []string{"mcp__web__echo"}},
		{job: "build", status: "done", verified: true, verifyOK: ptr(true)},
		{job: "recall", status: "skipped", unusable: []string{"memory"}},
	} {
		j, ok := jobs[tc.job]
		if !ok {
			t.Errorf("%s: not in the report", tc.job)
			continue
		}
		if j.Status != tc.status || !slices.Equal(j.Denied, tc.denied) || !slices.Equal(j.Unusable, tc.unusable) || j.Verified != tc.verified {
			t.Errorf("%s: status %s denied %q unusable %q verified %v; want %s %q %q %v", tc.job, j.Status, j.Denied, j.Unusable, j.Verified,
				tc.status, tc.denied, tc.unusable, tc.verified)
		}
		if tc.verifyOK != nil && (j.Verify == nil || j.Verify.OK != *tc.verifyOK) {
			t.Errorf("%s: verify %+v", tc.job, j.Verify)
		}
	}
	servers := map[string]Server{}
	for _, s := range n.Servers {
		servers[s.Name] = s
	}
	if m := servers["memory"]; len(m.Outages) != 2 || m.Outages[0].RecoveredBy != "reconnect" || !m.Outages[1].To.IsZero() ||
		m.Status != "unhealthy" || m.StatusFrom != "night" || m.BlockedCalls != 1 {
		t.Errorf("memory = %+v; want the preflight outage (back by reconnect), the init one still open, unhealthy at the end", m)
	}
	if w := servers["web"]; w.Status != "healthy" || len(w.Outages) != 0 {
		t.Errorf("web = %+v; want healthy at the end of the night, whatever the cache says now", w)
	}
	if tt := n.Totals; tt.Done != 2 || tt.Verified != 2 || tt.Failed != 1 || tt.Skipped != 1 || tt.BlockedCalls != 1 || tt.Outages != 2 {
		t.Errorf("totals = %+v", tt)
	}
	var md bytes.Buffer
	if err := n.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2 done (2 verified)", "denied: mcp__web__echo", "could not use: memory",
		"attempt 1 retried: verify failed (exit 1): FAIL TestX",
		"memory: down 02:00–02:02 (unreachable: connect ECONNREFUSED), back by reconnect; down since 02:02",
		"at the end: unhealthy", "web: no outage · at the end: healthy", "4 jobs, 2 done, 2 verified",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var html bytes.Buffer
	if err := n.HTML(&html); err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(html.String(), `class="outage" data-server="memory"`); c != 2 {
		t.Errorf("html has %d bands for memory, want one per outage (the preflight one included)", c)
	}
	_ = os.Remove(cache)
}

func ptr[T any](v T) *T { return &v }

// Recorded journals, each with what its report must say: the demo's real
// night (scripts/demo.sh, Claude Code 2.1.332), the hand-written one
// above, and a journal of the release before issue 10 (no server-final
// lines: the cache gives the servers' states, as it did then).
func TestReportsOfRecordedJournals(t *testing.T) {
	for _, tc := range []struct {
		journal                         string
		done, verified, failed, skipped int
		outages, blocked                int
		status                          map[string]string // server → state shown
		statusFrom                      string
		markdown                        []string
	}{
		{journal: "demo-night.jsonl", done: 4, verified: 1, outages: 1,
			status: map[string]string{"notes": "healthy", "search": "healthy"}, statusFrom: "night",
			markdown: []string{"| research | ✅ done |", "deferred", "search: down", "back by reconnect", "at the end: healthy"}},
		{journal: "done-means-done.jsonl", done: 2, verified: 2, failed: 1, skipped: 1, outages: 2, blocked: 1,
			status: map[string]string{"memory": "unhealthy", "web": "healthy"}, statusFrom: "night",
			markdown: []string{"denied: mcp__web__echo", "could not use: memory"}},
		{journal: "../../journal/testdata/v0-finished.jsonl", done: 2, failed: 1, skipped: 1, outages: 1, blocked: 1,
			markdown: []string{"4 jobs: 2 done, 1 failed, 1 skipped"}},
	} {
		t.Run(tc.journal, func(t *testing.T) {
			n, err := Build(filepath.Join("testdata", tc.journal), "")
			if err != nil {
				t.Fatal(err)
			}
			tt := n.Totals
			if tt.Done != tc.done || tt.Verified != tc.verified || tt.Failed != tc.failed || tt.Skipped != tc.skipped ||
				tt.Outages != tc.outages || tt.BlockedCalls != tc.blocked {
				t.Errorf("totals = %+v", tt)
			}
			for _, s := range n.Servers {
				if want, ok := tc.status[s.Name]; ok && (s.Status != want || s.StatusFrom != tc.statusFrom) {
					t.Errorf("%s: %s from %q, want %s from %q", s.Name, s.Status, s.StatusFrom, want, tc.statusFrom)
				}
			}
			var md bytes.Buffer
			if err := n.Markdown(&md); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.markdown {
				if !strings.Contains(md.String(), want) {
					t.Errorf("markdown lacks %q:\n%s", want, md.String())
				}
			}
		})
	}
}
