package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/journal"
)

// The night's pauses on the model's API and an early stop reach the
// report: its verdict, the Markdown section and the HTML page.
func TestReportShowsPausesAndStop(t *testing.T) {
	t0 := time.Date(2027, 1, 14, 3, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	events := []journal.Event{
		{Time: at(0), Type: journal.RunStarted, Run: "r", Batch: "b"},
		{Time: at(1), Type: journal.JobStarted, Job: "a", Attempt: 1},
		{Time: at(2), Type: journal.JobRetried, Job: "a", Attempt: 1, Class: "usage-limit", Reason: "You've hit your 5-hour limit"},
		{Time: at(2), Type: journal.NightPaused, Class: "usage-limit", Reason: "You've hit your 5-hour limit", Until: at(32)},
		{Time: at(32), Type: journal.NightResumed, Class: "usage-limit", Reason: "the pause ended"},
		{Time: at(33), Type: journal.JobStarted, Job: "a", Attempt: 2},
		{Time: at(34), Type: journal.JobFinished, Job: "a", Attempt: 2, Status: journal.Failed, Reason: "Invalid API key"},
		{Time: at(34), Type: journal.NightStopped, Class: "invalid-credentials", Reason: "Invalid API key"},
		{Time: at(34), Type: journal.JobSkipped, Job: "b", Status: journal.Skipped, Reason: "the night stopped: Invalid API key"},
		{Time: at(35), Type: journal.RunFinished},
	}
	n := fromEvents(events)
	n.total()
	if len(n.Pauses) != 1 || !n.Pauses[0].To.Equal(at(32)) || n.Pauses[0].Class != "usage-limit" {
		t.Fatalf("pauses = %+v", n.Pauses)
	}
	if n.Stopped != "Invalid API key" {
		t.Errorf("stopped = %q", n.Stopped)
	}
	if v := n.Verdict(); !strings.Contains(v, "paused 30m00s on the API (1 pause)") || !strings.Contains(v, "stopped early: Invalid API key") {
		t.Errorf("verdict = %q", v)
	}
	var md, html bytes.Buffer
	if err := n.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := n.HTML(&html); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"markdown": md.String(), "html": html.String()} {
		for _, want := range []string{"The model", "paused 03:02–03:32 (30m00s), usage-limit: You", "The night stopped early: Invalid API key"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, out)
			}
		}
	}
}
