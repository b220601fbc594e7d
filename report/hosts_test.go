package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/pgtest"
	"github.com/nightwatch-dev/nightwatch/journal"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// cluster-night.jsonl is a night over three hosts: coord started it and
// died, mini resumed it; mini's and linux-1's workers ran the attempts
// (session-process and the end lines carry their host, job-started does
// not: the coordinator writes it when it enqueues). triage's first
// attempt, on linux-1, was rescued and retried on mini; train never ran.
const clusterFixture = "testdata/cluster-night.jsonl"

func TestClusterNightHosts(t *testing.T) {
	n, err := Build(clusterFixture, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		job   string
		hosts []string
	}{
		{"build-ios", []string{"mini"}},
		{"triage", []string{"linux-1", "mini"}},
		{"train", nil},
		{"digest", []string{"linux-1"}},
	} {
		var got *Job
		for i := range n.Jobs {
			if n.Jobs[i].Name == tc.job {
				got = &n.Jobs[i]
			}
		}
		if got == nil || strings.Join(got.Hosts, ",") != strings.Join(tc.hosts, ",") {
			t.Errorf("job %s: %+v, want hosts %q", tc.job, got, tc.hosts)
		}
	}
	// A coordinator's death does not end an attempt its worker runs on.
	if triage := n.Jobs[1]; triage.Status != "done" || triage.tries[0].outcome != "retried" || triage.tries[0].host != "linux-1" {
		t.Errorf("triage = %+v", triage)
	}

	wantHosts := []struct {
		name        string
		coordinator bool
		attempts    int
		outcomes    map[string]int
		jobs        string
		busy        time.Duration
	}{
		{"coord", true, 0, nil, "", 0},
		{"mini", true, 2, map[string]int{"done": 2}, "build-ios,triage", 29*time.Minute + 55*time.Second + 20*time.Minute},
		{"linux-1", false, 2, map[string]int{"done": 1, "retried": 1}, "triage,digest", 44*time.Minute + 55*time.Second + 30*time.Minute},
	}
	if len(n.Hosts) != len(wantHosts) {
		t.Fatalf("hosts %+v, want %d", n.Hosts, len(wantHosts))
	}
	for i, w := range wantHosts {
		h := n.Hosts[i]
		if h.Name != w.name || h.Coordinator != w.coordinator || h.Attempts != w.attempts || strings.Join(h.Jobs, ",") != w.jobs || h.Duration != w.busy {
			t.Errorf("host %d = %+v, want %+v", i, h, w)
		}
		for o, c := range w.outcomes {
			if h.Outcomes[o] != c {
				t.Errorf("host %s outcomes %v, want %v", h.Name, h.Outcomes, w.outcomes)
			}
		}
	}

	var md bytes.Buffer
	if err := n.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"· 02:00–03:20 · 3 hosts · no outage**",
		"| job | status | host | attempts | duration | turns | cost | notes |\n|---|---|---|--:|--:|--:|--:|---|\n",
		"| build-ios | ✅ done | mini | 1 | 29m55s | 12 | $0.07 |  |\n",
		"| triage | ✅ done | linux-1, mini | 2 | 1h05m | 20 | $0.11 | attempt 1 retried on linux-1: its worker stopped",
		"| train | ⏭ skipped | – | 0 |",
		"| digest | ✅ done | linux-1 | 1 | 30m00s | 9 | $0.05 |  |\n",
		"## Hosts\n\n- coord (coordinator): ran no attempt\n" +
			"- mini (coordinator): 2 attempts (2 done), 49m55s, $0.18: build-ios, triage\n" +
			"- linux-1: 2 attempts (1 done, 1 retried), 1h15m, $0.05: triage, digest\n",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}

	var html bytes.Buffer
	if err := n.HTML(&html); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<th>status</th><th>host</th><th>attempts</th>",
		`<tr><td><b>triage</b></td><td><span class="st done">done</span></td><td data-label="host">linux-1, mini</td>`,
		"<h2>Hosts</h2>",
		"<li>linux-1: 2 attempts (1 done, 1 retried), 1h15m, $0.05: triage, digest</li>",
		"<title>triage attempt 1 on linux-1: retried",
	} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}

	var js bytes.Buffer
	if err := n.JSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Night
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Hosts) != 3 || back.Hosts[2].Name != "linux-1" || back.Hosts[2].Outcomes["retried"] != 1 || len(back.Jobs[1].Hosts) != 2 {
		t.Errorf("JSON hosts %+v, jobs %+v", back.Hosts, back.Jobs)
	}
}

// The same night with no Host on any event is a one-host report: no host
// column, no Hosts section, no host in the verdict or the JSON.
func TestNightWithoutHostsShowsNone(t *testing.T) {
	events, err := journal.Read(clusterFixture)
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		events[i].Host = ""
	}
	n, err := BuildEvents(events, "")
	if err != nil {
		t.Fatal(err)
	}
	var md, html, js bytes.Buffer
	if err := n.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := n.HTML(&html); err != nil {
		t.Fatal(err)
	}
	if err := n.JSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"markdown": md.String(), "html": html.String(), "json": js.String()} {
		for _, host := range []string{"host", "mini", "linux-1", "coord"} {
			if strings.Contains(out, host) {
				t.Errorf("%s names %q:\n%s", name, host, out)
			}
		}
	}
	if !strings.Contains(md.String(), "| job | status | attempts | duration |") {
		t.Errorf("markdown without the one-host table:\n%s", md.String())
	}
}

// A run resumed after its supervisor died: on one host the attempt it was
// running ended then (interrupted); a cluster worker's attempt runs on
// without its coordinator.
func TestResumeInterruptsOnlyLocalAttempts(t *testing.T) {
	t0 := time.Date(2027, 1, 14, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, host, want string
	}{
		{"one host", "", "interrupted"},
		{"a cluster worker", "mini", StatusUnfinished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := BuildEvents([]journal.Event{
				{Time: t0, Type: journal.RunStarted, Run: "r", Batch: "b"},
				{Time: t0.Add(time.Second), Type: journal.JobStarted, Run: "r", Job: "j", Attempt: 1},
				{Time: t0.Add(2 * time.Second), Type: journal.SessionProcess, Run: "r", Job: "j", Attempt: 1, PID: 9, Host: tc.host},
				{Time: t0.Add(time.Minute), Type: journal.RunResumed, Run: "r", PID: 10},
			}, "")
			if err != nil {
				t.Fatal(err)
			}
			if a := n.Jobs[0].tries[0]; a.outcome != tc.want {
				t.Errorf("attempt after the resume: %+v, want %s", a, tc.want)
			}
		})
	}
}

// Events two hosts appended to the shared journal, read back from
// Postgres, render with both hosts; the newest run is the one reported.
func TestClusterReportFromPostgres(t *testing.T) {
	if runtime.GOOS == "windows" {
		// pgtest has no Windows server, and the Wine gate runs this
		// package with NIGHTWATCH_REQUIRE_POSTGRES=1 set.
		t.Skip("the cluster tests run on Linux and macOS")
	}
	dsn := pgtest.New(t)
	ctx := context.Background()
	db, err := clusterdb.Open(ctx, dsn, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	events, err := journal.Read(clusterFixture)
	if err != nil {
		t.Fatal(err)
	}
	// An older night first, by another coordinator.
	old := journal.Event{Time: events[0].Time.Add(-24 * time.Hour), Type: journal.RunStarted, Run: "older-run", Batch: "nightly", Host: "coord"}
	if err := db.AppendJournal(ctx, "coord", old); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		writer := ev.Host
		if writer == "" {
			writer = "coord" // the coordinator's own lines
		}
		if err := db.AppendJournal(ctx, writer, ev); err != nil {
			t.Fatal(err)
		}
	}
	run, ended, err := db.LatestRun(ctx)
	if err != nil || run != events[0].Run || !ended {
		t.Fatalf("latest run %q ended %v (%v), want %s ended", run, ended, err, events[0].Run)
	}
	got, err := db.RunEvents(ctx, run)
	if err != nil || len(got) != len(events) {
		t.Fatalf("%d events (%v), want %d", len(got), err, len(events))
	}
	n, err := BuildEvents(got, "")
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := n.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Night " + run + " (nightly)",
		"| triage | ✅ done | linux-1, mini | 2 |",
		"- mini (coordinator): 2 attempts (2 done), 49m55s, $0.18: build-ios, triage\n",
		"- linux-1: 2 attempts (1 done, 1 retried), 1h15m, $0.05: triage, digest\n",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the shared journal's report lacks %q:\n%s", want, md.String())
		}
	}
}
