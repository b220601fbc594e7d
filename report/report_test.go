package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/journal"
)

// night.jsonl is a hand-made journal in the supervisor's exact event
// shapes: a 6-hour night (+01:00), six jobs, one retry, one deferral, one
// skip, and an outage of notes from 03:10 to 03:25 ended by a reconnect,
// during which the hook blocked four calls.
func buildFixture(t *testing.T) *Night {
	t.Helper()
	n, err := Build("testdata/night.jsonl", "testdata/night-cache.json")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func at(t *testing.T, clock string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, "2027-01-14T"+clock+"+01:00")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestBuildFixture(t *testing.T) {
	n := buildFixture(t)
	if n.RunID != "20270114T010000Z-c0de" || n.Batch != "nightly" || !n.Finished {
		t.Errorf("run = %q batch %q finished %v", n.RunID, n.Batch, n.Finished)
	}
	if !n.Started.Equal(at(t, "02:00:00.12")) || !n.Ended.Equal(at(t, "07:47:00")) {
		t.Errorf("night %v – %v", n.Started, n.Ended)
	}
	if len(n.Warnings) != 0 {
		t.Errorf("warnings: %q", n.Warnings)
	}

	want := []struct {
		name, status string
		attempts     int
		turns        int
		cost         float64
		deferrals    int
	}{
		{"digest", "done", 1, 14, 0.06, 0},
		{"triage", "done", 2, 52, 0.11, 0},
		{"refactor", "done", 1, 21, 0.09, 0},
		{"summarize", "done", 1, 18, 0.08, 1},
		{"backup-check", "done", 1, 9, 0.08, 0},
		{"weekly", "skipped", 0, 0, 0, 0},
	}
	if len(n.Jobs) != len(want) {
		t.Fatalf("got %d jobs, want %d: %+v", len(n.Jobs), len(want), n.Jobs)
	}
	for i, w := range want {
		j := n.Jobs[i]
		if j.Name != w.name || j.Status != w.status || j.Attempts != w.attempts || j.Turns != w.turns ||
			math.Abs(j.CostUSD-w.cost) > 1e-9 || len(j.Deferrals) != w.deferrals {
			t.Errorf("job %d = %s %s attempts %d turns %d cost %.4f deferrals %d, want %+v",
				i, j.Name, j.Status, j.Attempts, j.Turns, j.CostUSD, len(j.Deferrals), w)
		}
	}
	triage := n.Jobs[1]
	// Two attempts: 02:00:06–02:58:00 and 03:06:00–03:40:00, the pause
	// between them not counted.
	if wantD := 57*time.Minute + 54*time.Second + 34*time.Minute; triage.Duration != wantD {
		t.Errorf("triage duration %v, want %v", triage.Duration, wantD)
	}
	if !triage.Started.Equal(at(t, "02:00:06")) || !triage.Ended.Equal(at(t, "03:40:00")) {
		t.Errorf("triage %v – %v", triage.Started, triage.Ended)
	}
	d := n.Jobs[3].Deferrals[0]
	if !d.At.Equal(at(t, "03:12:00")) || !strings.Contains(d.Reason, "server notes is down since 03:10:04") {
		t.Errorf("deferral = %+v", d)
	}
	if n.Jobs[5].Reason != "the deadline 07:30 passed" {
		t.Errorf("skip reason %q", n.Jobs[5].Reason)
	}

	// The cache adds calendar (never in the journal) and every status.
	names := []string{}
	for _, s := range n.Servers {
		names = append(names, s.Name+"="+s.Status)
	}
	if got := strings.Join(names, " "); got != "calendar=unhealthy notes=healthy web=healthy" {
		t.Errorf("servers %s", got)
	}
	notes := n.Servers[1]
	if notes.BlockedCalls != 4 || len(notes.Outages) != 1 {
		t.Fatalf("notes: %+v", notes)
	}
	o := notes.Outages[0]
	if !o.From.Equal(at(t, "03:10:04")) || !o.To.Equal(at(t, "03:25:02")) || o.RecoveredBy != "reconnect" ||
		o.Reason != "transport: MCP error -32000: Connection closed" {
		t.Errorf("outage = %+v", o)
	}

	tot := n.Totals
	if tot.Jobs != 6 || tot.Done != 5 || tot.Failed != 0 || tot.Skipped != 1 || tot.Attempts != 6 ||
		tot.BlockedCalls != 4 || tot.Outages != 1 || math.Abs(tot.CostUSD-0.42) > 1e-9 ||
		tot.Duration != n.Ended.Sub(n.Started) {
		t.Errorf("totals = %+v", tot)
	}
}

func TestMarkdownFixture(t *testing.T) {
	var b bytes.Buffer
	if err := buildFixture(t).Markdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"**6 jobs: 5 done, 1 skipped · $0.42 · 02:00–07:47 · 1 outage**",
		"| job | status | attempts | duration | turns | cost | notes |",
		"| triage | ✅ done | 2 | 1h32m | 52 | $0.11 | attempt 1 retried: error_max_turns",
		"| summarize | ✅ done | 1 | 1h05m | 18 | $0.08 | deferred 03:12: server notes is down since 03:10:04",
		"| weekly | ⏭ skipped | 0 | 0s | 0 | $0.00 | the deadline 07:30 passed |",
		"- notes: down 03:10–03:25 (transport: MCP error -32000: Connection closed), back by reconnect; 4 calls blocked · now healthy",
		"- web: no outage · now healthy",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if strings.Contains(md, "SECRETSECRET") {
		t.Errorf("a credential reached the report:\n%s", md)
	}
	if strings.Contains(md, "not finished") || strings.Contains(md, "still down") {
		t.Errorf("a finished night reads as unfinished:\n%s", md)
	}
	if testing.Verbose() {
		t.Log("\n" + md)
	}
}

// A supervisor that died: the last line is torn, there is no
// run-finished, the first attempt was cut by the crash, and notes is down
// when the journal ends.
func TestBuildTornUnfinished(t *testing.T) {
	n, err := Build("testdata/torn.jsonl", "")
	if err != nil {
		t.Fatal(err)
	}
	if n.Finished {
		t.Error("Finished without a run-finished line")
	}
	if len(n.Warnings) != 1 || !strings.Contains(n.Warnings[0], "torn last line") {
		t.Errorf("warnings = %q", n.Warnings)
	}
	end, _ := time.Parse(time.RFC3339, "2027-01-15T02:05:00Z")
	if !n.Ended.Equal(end) {
		t.Errorf("ended %v, want the last whole event %v", n.Ended, end)
	}
	if len(n.Jobs) != 2 {
		t.Fatalf("jobs: %+v", n.Jobs)
	}
	digest := n.Jobs[0]
	if digest.Status != StatusUnfinished || digest.Attempts != 2 || digest.tries[0].outcome != "interrupted" {
		t.Errorf("digest = %+v", digest)
	}
	if n.Jobs[1].Status != StatusUnfinished || len(n.Jobs[1].Deferrals) != 1 {
		t.Errorf("summarize = %+v", n.Jobs[1])
	}
	o := n.Servers[0].Outages[0]
	if !o.To.IsZero() || o.RecoveredBy != "" || o.Reason != "transport: connect ECONNREFUSED 127.0.0.1:7777" {
		t.Errorf("open outage = %+v", o)
	}

	var md bytes.Buffer
	if err := n.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2 jobs: 0 done, 2 unfinished · $0.00 · 01:00–02:05 · 1 outage · run not finished",
		"notes: down since 01:20, still down at the end (transport: connect ECONNREFUSED 127.0.0.1:7777); 1 call blocked",
		"attempt 1 interrupted: the supervisor stopped",
		"## Warnings",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var h bytes.Buffer
	if err := n.HTML(&h); err != nil {
		t.Fatal(err)
	}
	if svg := checkHTML(t, h.Bytes()); svg.outages != 1 || !strings.Contains(h.String(), "still down") {
		t.Errorf("html: %d outage bands, still down shown: %v", svg.outages, strings.Contains(h.String(), "still down"))
	}
}

// The journals under testdata/real were written by the supervisor itself,
// in its end-to-end test TestNightServerDiesAndReconnectBringsItBack (a
// stdio server breaks, its reconnect command repairs it; six jobs done),
// hard-linked out of the test's temporary folder while it ran; only the
// temporary path was shortened to /tmp/e2e. NIGHTWATCH_REPORT_JOURNAL (and
// NIGHTWATCH_REPORT_CACHE) point the same checks at another real journal.
func TestRealJournal(t *testing.T) {
	path, cache := filepath.Join("testdata", "real", "runs", "20261201T002415Z-79f1.jsonl"), filepath.Join("testdata", "real", "cache.json")
	if p := os.Getenv("NIGHTWATCH_REPORT_JOURNAL"); p != "" {
		path, cache = p, os.Getenv("NIGHTWATCH_REPORT_CACHE")
	}
	n, err := Build(path, cache)
	if err != nil {
		t.Fatal(err)
	}
	if !n.Finished || n.Totals.Jobs == 0 || n.Totals.Attempts < n.Totals.Jobs-n.Totals.Skipped {
		t.Errorf("night: finished %v totals %+v", n.Finished, n.Totals)
	}
	var h bytes.Buffer
	if err := n.HTML(&h); err != nil {
		t.Fatal(err)
	}
	if svg := checkHTML(t, h.Bytes()); svg.outages != n.Totals.Outages {
		t.Errorf("%d outage bands for %d outages", svg.outages, n.Totals.Outages)
	}
	if os.Getenv("NIGHTWATCH_REPORT_JOURNAL") != "" {
		return // the checks below know the recorded night
	}
	if n.Totals.Jobs != 6 || n.Totals.Done != 6 || n.Totals.Outages != 1 || len(n.Jobs[3].Deferrals) != 1 {
		t.Errorf("totals %+v, j4 %+v", n.Totals, n.Jobs[3])
	}
	var notes *Server
	for i := range n.Servers {
		if n.Servers[i].Name == "notes" {
			notes = &n.Servers[i]
		}
	}
	if notes == nil || len(notes.Outages) != 1 || notes.Outages[0].RecoveredBy != "reconnect" ||
		notes.Outages[0].To.IsZero() || notes.Status != "healthy" {
		t.Fatalf("notes = %+v", notes)
	}
	// The outage began when j3 broke the server and ended before j4 ran.
	if j4 := n.Jobs[3]; j4.Name != "j4" || !notes.Outages[0].To.Before(j4.Started) {
		t.Errorf("outage %+v, j4 %+v", notes.Outages[0], j4)
	}
}

// The same night, copied before the supervisor wrote j6's end and
// run-finished: a real unfinished journal.
func TestRealUnfinishedJournal(t *testing.T) {
	n, err := Build("testdata/real-unfinished.jsonl", "")
	if err != nil {
		t.Fatal(err)
	}
	if n.Finished || n.Totals.Done != 5 || n.Jobs[5].Status != StatusUnfinished || n.Jobs[5].Attempts != 1 {
		t.Errorf("finished %v totals %+v j6 %+v", n.Finished, n.Totals, n.Jobs[5])
	}
}

func TestJSON(t *testing.T) {
	n := buildFixture(t)
	var b bytes.Buffer
	if err := n.JSON(&b); err != nil {
		t.Fatal(err)
	}
	var back Night
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Totals != n.Totals || len(back.Jobs) != 6 || back.Servers[1].Outages[0].RecoveredBy != "reconnect" {
		t.Errorf("round trip: %+v", back.Totals)
	}
	if strings.Contains(b.String(), "SECRETSECRET") {
		t.Error("a credential reached the JSON")
	}
}

func TestLatestJournal(t *testing.T) {
	dir := t.TempDir()
	if _, err := LatestJournal(dir); err == nil {
		t.Error("no error for a state folder without runs")
	}
	runs := filepath.Join(dir, "runs")
	if err := os.MkdirAll(filepath.Join(runs, "20270114T010000Z-c0de"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"20270113T010000Z-aaaa.jsonl", "20270114T010000Z-c0de.jsonl", "20270112T230000Z-ffff.jsonl"} {
		if err := os.WriteFile(filepath.Join(runs, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := LatestJournal(dir)
	if err != nil || filepath.Base(got) != "20270114T010000Z-c0de.jsonl" {
		t.Errorf("LatestJournal = %q, %v", got, err)
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := Build(filepath.Join(t.TempDir(), "missing.jsonl"), ""); err == nil {
		t.Error("no error for a missing journal")
	}
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(empty, ""); err == nil {
		t.Error("no error for an empty journal")
	}
	// A corrupt cache only costs the statuses.
	bad := filepath.Join(t.TempDir(), "cache.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := Build("testdata/night.jsonl", bad)
	if err != nil || len(n.Warnings) != 1 || n.Servers[0].Status != "" {
		t.Errorf("corrupt cache: %v %+v", err, n)
	}
}

// How an outage ended: the healthy line's "by", else what the supervisor's
// maintenance lines did while the server was down.
func TestRecoveredBy(t *testing.T) {
	t0 := time.Date(2027, 1, 14, 3, 0, 0, 0, time.UTC)
	down := journal.Event{Time: t0, Type: journal.ServerState, Server: "s", Status: journal.Unhealthy, By: "probe", Code: "timeout", Reason: "no answer"}
	up := func(by string, status journal.Status) journal.Event {
		return journal.Event{Time: t0.Add(time.Minute), Type: journal.ServerState, Server: "s", Status: status, By: by}
	}
	maint := func(action journal.Action, status journal.Status) journal.Event {
		return journal.Event{Time: t0.Add(30 * time.Second), Type: journal.Maintenance, Server: "s", Action: action, Status: status, Reason: "restart s"}
	}
	for _, c := range []struct {
		name   string
		events []journal.Event
		want   string
	}{
		{"probe", []journal.Event{down, up("probe", journal.Healthy)}, "probe"},
		{"passive", []journal.Event{down, up("passive", journal.Healthy)}, "passive"},
		{"reconnect", []journal.Event{down, up("reconnect", journal.Healthy)}, "reconnect"},
		{"reset", []journal.Event{down, up("reset", "")}, "reset"},
		{"maintenance reconnect", []journal.Event{down, maint(journal.Reconnect, ""), up("", journal.Healthy)}, "reconnect"},
		{"maintenance probe", []journal.Event{down, maint(journal.Reprobe, journal.Healthy), up("", journal.Healthy)}, "probe"},
		{"unknown", []journal.Event{down, up("", journal.Healthy)}, ""},
	} {
		n := fromEvents(c.events)
		var s *Server
		for i := range n.Servers {
			if n.Servers[i].Name == "s" {
				s = &n.Servers[i]
			}
		}
		if s == nil || len(s.Outages) != 1 || s.Outages[0].RecoveredBy != c.want || s.Outages[0].Reason != "timeout: no answer" {
			t.Errorf("%s: %+v, want recovered by %q", c.name, s, c.want)
		}
	}
}

// Journals written by the release before the typed vocabulary render as
// they did then: testdata/v0-*.md and .json were rendered by that release
// from ../journal/testdata/v0-*.jsonl.
func TestLegacyJournalRendersAsBefore(t *testing.T) {
	for _, name := range []string{"v0-finished", "v0-unfinished"} {
		t.Run(name, func(t *testing.T) {
			n, err := Build(filepath.Join("..", "journal", "testdata", name+".jsonl"), "")
			if err != nil {
				t.Fatal(err)
			}
			var md, js bytes.Buffer
			if err := n.Markdown(&md); err != nil {
				t.Fatal(err)
			}
			if err := n.JSON(&js); err != nil {
				t.Fatal(err)
			}
			for ext, got := range map[string][]byte{".md": md.Bytes(), ".json": js.Bytes()} {
				want, err := os.ReadFile(filepath.Join("testdata", name+ext))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s%s differs from the old release's rendering:\n got %s\nwant %s", name, ext, got, want)
				}
			}
		})
	}
}

// A job deferred again at every maintenance pass for the same reason gets
// one note in the Markdown table, not one per pass; a new reason is a new
// note.
func TestJobNotesFoldRepeatedDeferrals(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 9, 51, 0, time.Local)
	down := "server search is down since 09:09:51 (connection refused)"
	j := Job{Name: "research", Deferrals: []Deferral{
		{At: at, Reason: down}, {At: at.Add(time.Second), Reason: down}, {At: at.Add(4 * time.Second), Reason: down},
		{At: at.Add(5 * time.Second), Reason: "it needs outage, which is not done"},
	}}
	got := strings.Join(jobNotes(j), "; ")
	want := "deferred ×3 (first 09:09): " + down + "; deferred 09:09: it needs outage, which is not done"
	if got != want {
		t.Errorf("notes = %q\nwant    %q", got, want)
	}
}

// Text from the night (a crash's stderr, verify output, a server's reason)
// cannot add Markdown or HTML to the report, nor terminal escapes to the
// terminal that prints it.
func TestMarkdownEscapesOutsideText(t *testing.T) {
	hostile := "boom <img src=x onerror=alert(1)> [click](http://evil.example) `code` a|b & \x1b[2J\x1b[31mred"
	n := &Night{RunID: "r1", Batch: "b", Finished: true,
		Jobs:    []Job{{Name: "j", Status: "failed", Attempts: 1, Reason: hostile}},
		Servers: []Server{{Name: "s", Outages: []Outage{{Reason: hostile}}}},
		Pauses:  []Pause{{Class: "api-unavailable", Reason: hostile}},
		Stopped: hostile, Warnings: []string{hostile}}
	var buf bytes.Buffer
	if err := n.Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, raw := range []string{"<img", "[click", "](http", "`code", "|b", "& "} {
		// Not preceded by the escaping backslash.
		if regexp.MustCompile(`(^|[^\\])` + regexp.QuoteMeta(raw)).MatchString(out) {
			t.Errorf("the report holds %q unescaped:\n%s", raw, out)
		}
	}
	for _, raw := range []string{"\x1b"} {
		if strings.Contains(out, raw) {
			t.Errorf("the report holds %q unescaped:\n%s", raw, out)
		}
	}
	for _, escaped := range []string{`\<img`, `\[click\]`, `\\x1b\[2J`, "\\`code\\`", `a\|b`, `\&`} {
		if !strings.Contains(out, escaped) {
			t.Errorf("the report lacks %q:\n%s", escaped, out)
		}
	}
}

// Side effects and tasks left running come from the journal's lines, one
// per call, and are listed in the job's notes (bounded).
func TestSideEffectsAndLostTasks(t *testing.T) {
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	events := []journal.Event{
		{Time: at, Type: journal.RunStarted, Run: "r", Batch: "b"},
		{Time: at, Type: journal.JobStarted, Run: "r", Job: "j", Attempt: 1},
		{Time: at, Type: journal.SideEffect, Run: "r", Job: "j", Attempt: 1, Server: "notes", Tool: "mcp__notes__create", Effect: 1, Input: `{"title":"x"}`},
		{Time: at, Type: journal.TaskLost, Run: "r", Job: "j", Attempt: 1, Server: "exports", Tool: "mcp__exports__run", Effect: 1},
		{Time: at, Type: journal.JobFinished, Run: "r", Job: "j", Attempt: 1, Status: journal.Failed, Reason: "not done: a task was left running on exports"},
	}
	path := filepath.Join(t.TempDir(), "r.jsonl")
	var data []byte
	for _, ev := range events {
		line, _ := json.Marshal(ev)
		data = append(append(data, line...), '\n')
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := Build(path, "")
	if err != nil {
		t.Fatal(err)
	}
	j := n.Jobs[0]
	if len(j.SideEffects) != 1 || j.SideEffects[0].Tool != "mcp__notes__create" || len(j.TasksLost) != 1 {
		t.Fatalf("job %+v", j)
	}
	notes := strings.Join(jobNotes(j), "; ")
	for _, want := range []string{`side effects: mcp__notes__create {"title":"x"} (attempt 1)`, "task left running by mcp__exports__run (attempt 1)"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
	many := make([]SideEffect, maxSideEffectsShown+5)
	if s := sideEffects(many); !strings.HasSuffix(s, "and 5 more") {
		t.Errorf("a long list is not bounded: %q", s)
	}
}

// A job's stdio servers restarted mid-session, by nightwatch or by Claude
// Code, its HTTP server back as a new process, and a server lost: each is
// on the job, and its note says so.
func TestJobShowsServerRestarts(t *testing.T) {
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	events := []journal.Event{
		{Time: at, Type: journal.RunStarted, Run: "r", Batch: "b"},
		{Time: at, Type: journal.JobStarted, Run: "r", Job: "digest", Attempt: 1},
		{Time: at.Add(time.Minute), Type: journal.ServerRestarted, Run: "r", Job: "digest", Attempt: 1, Server: "notes",
			By: journal.RestartedByNightwatch, Reason: "it exited with code 3"},
		{Time: at.Add(2 * time.Minute), Type: journal.ServerRestarted, Run: "r", Job: "digest", Attempt: 1, Server: "notes",
			By: journal.RestartedByNightwatch, Reason: "it hung"},
		{Time: at.Add(3 * time.Minute), Type: journal.ServerRestarted, Run: "r", Job: "digest", Attempt: 1, Server: "files",
			By: journal.RestartedByClaude, Reason: "Claude Code started it again (start 2 in this attempt)"},
		{Time: at.Add(4 * time.Minute), Type: journal.ServerLost, Run: "r", Job: "digest", Attempt: 1, Server: "notes", Reason: "restarted 5 times"},
		{Time: at.Add(5 * time.Minute), Type: journal.ServerRestarted, Run: "r", Job: "digest", Attempt: 1, Server: "web",
			By: journal.RestartedOutside, Reason: "HTTP: its address refused connections during the outage (seen by a probe), then a probe's handshake answered"},
	}
	n, err := BuildEvents(events, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Jobs) != 1 || len(n.Jobs[0].Restarts) != 4 || !slices.Equal(n.Jobs[0].Lost, []string{"notes"}) {
		t.Fatalf("jobs = %+v", n.Jobs)
	}
	got := strings.Join(jobNotes(n.Jobs[0]), "; ")
	want := "restarted mid-session: notes 2× (it hung), files (Claude Code started it again (start 2 in this attempt)), " +
		"web (HTTP: its address refused connections during the outage (seen by a probe), then a probe's handshake answered); lost mid-session: notes"
	if got != want {
		t.Errorf("notes = %q\nwant    %q", got, want)
	}
}

// A job stopped by its own budget: the limit is on the job's record, and
// its notes say "budget exceeded" with the limit and what was spent.
func TestJobShowsBudgetExceeded(t *testing.T) {
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	budget := &journal.Budget{Limit: journal.BudgetMaxCost, Max: 0.5, Spent: 0.62, By: journal.BudgetByClaude}
	n, err := BuildEvents([]journal.Event{
		{Time: at, Type: journal.RunStarted, Run: "r", Batch: "b"},
		{Time: at, Type: journal.JobStarted, Run: "r", Job: "j", Attempt: 1},
		{Time: at.Add(time.Minute), Type: journal.JobFinished, Run: "r", Job: "j", Attempt: 1, Status: journal.Failed,
			Reason: "budget exceeded: max_cost_usd $0.50 reached ($0.6200 spent)", Budget: budget,
			Result: &journal.Result{Subtype: "error_max_budget_usd", IsError: true, NumTurns: 4, CostUSD: 0.62}},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	j := n.Jobs[0]
	if j.Budget == nil || *j.Budget != *budget || j.Status != "failed" || j.CostUSD != 0.62 {
		t.Fatalf("job %+v budget %+v", j, j.Budget)
	}
	if notes := strings.Join(jobNotes(j), "; "); !strings.Contains(notes, "budget exceeded: max_cost_usd $0.50 reached ($0.6200 spent)") {
		t.Errorf("notes %q", notes)
	}
	data, _ := json.Marshal(j)
	if !strings.Contains(string(data), `"budget":{"limit":"max_cost_usd","max":0.5,"spent":0.62,"by":"claude-code"}`) {
		t.Errorf("JSON %s", data)
	}
}
