package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// journalTestDir is a state folder for one journal test.
func journalTestDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "state")
}

// journalTestWrite writes a journal file by hand, for reader tests.
func journalTestWrite(t *testing.T, stateDir, runID, content string) string {
	t.Helper()
	dir := filepath.Join(stateDir, "runs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, runID+".jsonl")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func journalTestLine(t testing.TB, ev Event) string {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func TestJournalNewRunIDSortsByTime(t *testing.T) {
	t1 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Second)
	a, b := NewRunID(t1), NewRunID(t2)
	if !regexp.MustCompile(`^20261201T020000Z-[0-9a-f]{4}$`).MatchString(a) {
		t.Errorf("NewRunID = %q, want 20261201T020000Z-<4 hex>", a)
	}
	if a >= b {
		t.Errorf("run ids do not sort by time: %q >= %q", a, b)
	}
	// Local times name the same UTC instant.
	if got := NewRunID(t1.In(time.FixedZone("CET", 3600))); got[:16] != a[:16] {
		t.Errorf("local time gave %q, want the UTC stamp of %q", got, a)
	}
}

func TestJournalRoundTrip(t *testing.T) {
	state := journalTestDir(t)
	j, err := Create(state, "20261201T020000Z-abcd")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(state, "runs", "20261201T020000Z-abcd.jsonl"); j.Path != want {
		t.Errorf("Path = %s, want %s", j.Path, want)
	}
	for path, want := range map[string]os.FileMode{filepath.Join(state, "runs"): 0o700, j.Path: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode = %o, want %o", path, fi.Mode().Perm(), want)
		}
	}
	if _, err := Create(state, "20261201T020000Z-abcd"); err == nil {
		t.Error("Create reused an existing journal")
	}

	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	in := []Event{
		{Time: at, Type: RunStarted, Batch: "nightly", BatchFile: "/b/nightly.yaml", PID: 42},
		{Time: at.Add(time.Second), Type: JobStarted, Job: "inbox", Attempt: 1},
		{Time: at.Add(time.Minute), Type: JobFinished, Job: "inbox", Attempt: 1, Status: Done,
			Result: &Result{Subtype: "success", NumTurns: 3, CostUSD: 0.25, SessionID: "s-1"}},
		{Time: at.Add(2 * time.Minute), Type: ServerState, Server: "notes", Status: Unhealthy, By: "probe", Code: "transport", Reason: "exited"},
	}
	for _, ev := range in {
		if err := j.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	before := time.Now()
	if err := j.Append(Event{Type: RunFinished}); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(Event{}); err == nil {
		t.Error("an event without a type was written")
	}

	got, warnings, err := ReadWarnings(j.Path)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("ReadJournal: %v, warnings %v", err, warnings)
	}
	if len(got) != len(in)+1 {
		t.Fatalf("read %d events, want %d", len(got), len(in)+1)
	}
	for i, ev := range in {
		ev.Run = "20261201T020000Z-abcd" // stamped by Append
		if !reflect.DeepEqual(got[i], ev) {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, got[i], ev)
		}
	}
	last := got[len(got)-1]
	if last.Run != j.RunID || last.Time.Before(before.Add(-time.Second)) || last.Time.After(time.Now()) {
		t.Errorf("Append did not stamp run and time: %+v", last)
	}
}

// TestJournalConcurrentAppendsAreWholeLines appends from many goroutines,
// as parallel jobs do, and checks that every line is a whole event.
func TestJournalConcurrentAppendsAreWholeLines(t *testing.T) {
	j, err := Create(journalTestDir(t), NewRunID(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := Event{Type: JobStarted, Job: fmt.Sprintf("job-%d", i), Reason: strings.Repeat("x", 2000)}
			if err := j.Append(ev); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	data, err := os.ReadFile(j.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		t.Error("the journal does not end with a newline")
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	seen := map[string]bool{}
	for i, l := range lines {
		var ev Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %d is not a whole event: %v", i+1, err)
		}
		seen[ev.Job] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct jobs, want %d", len(seen), n)
	}
}

func TestJournalTornLastLineIsAWarning(t *testing.T) {
	state := journalTestDir(t)
	whole := journalTestLine(t, Event{Type: RunStarted, Run: "r", Batch: "nightly"}) +
		journalTestLine(t, Event{Type: JobStarted, Run: "r", Job: "a", Attempt: 1})
	for name, tail := range map[string]string{
		"cut mid-line":   `{"time":"2026-12-01T02:00:00Z","type":"job-fin`,
		"NUL padding":    "\x00\x00\x00\x00",
		"garbage + NULs": "{\"ty\x00\x00\n\x00\x00",
	} {
		t.Run(name, func(t *testing.T) {
			path := journalTestWrite(t, state, "r-"+strings.ReplaceAll(name, " ", ""), whole+tail)
			events, warnings, err := ReadWarnings(path)
			if err != nil {
				t.Fatalf("a torn last line is an error: %v", err)
			}
			if len(events) != 2 {
				t.Errorf("read %d events, want the 2 whole ones", len(events))
			}
			if plain, err := Read(path); err != nil || len(plain) != 2 {
				t.Errorf("ReadJournal: %d events, %v; want the 2 whole ones, no error", len(plain), err)
			}
			if strings.Contains(tail, "{") && (len(warnings) != 1 || !strings.Contains(warnings[0], path+":3")) {
				t.Errorf("warnings = %q, want one naming %s:3", warnings, path)
			}

			// Resuming cuts the torn line, so the next append does not
			// glue onto it.
			j, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tail, "{") && j.Repaired == "" {
				t.Error("Open did not say it cut a torn line")
			}
			if err := j.Append(Event{Type: JobFinished, Job: "a", Status: Done}); err != nil {
				t.Fatal(err)
			}
			events, warnings, err = ReadWarnings(path)
			if err != nil || len(warnings) > 0 || len(events) != 3 {
				t.Fatalf("after resume: %d events, warnings %q, err %v; want 3 clean events", len(events), warnings, err)
			}
			if events[2].Run != "r-"+strings.ReplaceAll(name, " ", "") {
				t.Errorf("resumed journal stamps run %q", events[2].Run)
			}
		})
	}
}

func TestJournalLastEventWithoutNewline(t *testing.T) {
	state := journalTestDir(t)
	line := journalTestLine(t, Event{Type: RunStarted, Run: "r", Batch: "nightly"})
	path := journalTestWrite(t, state, "r", strings.TrimSuffix(line, "\n"))
	events, warnings, err := ReadWarnings(path)
	if err != nil || len(warnings) > 0 || len(events) != 1 {
		t.Fatalf("whole event without newline: %d events, warnings %q, err %v", len(events), warnings, err)
	}
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(Event{Type: RunFinished}); err != nil {
		t.Fatal(err)
	}
	if events, err := Read(path); err != nil || len(events) != 2 {
		t.Fatalf("after append: %d events, err %v", len(events), err)
	}
}

func TestJournalCorruptMiddleLineIsAnError(t *testing.T) {
	state := journalTestDir(t)
	content := journalTestLine(t, Event{Type: RunStarted, Run: "r", Batch: "nightly"}) +
		"{not json}\n" +
		journalTestLine(t, Event{Type: JobStarted, Run: "r", Job: "a"})
	path := journalTestWrite(t, state, "r", content)
	_, _, err := ReadWarnings(path)
	if err == nil || !strings.Contains(err.Error(), path+":2") {
		t.Fatalf("err = %v, want one naming %s:2", err, path)
	}
	// A line without a type is not an event either.
	path = journalTestWrite(t, state, "r2", `{"run":"r"}`+"\n"+content)
	if _, _, err := ReadWarnings(path); err == nil || !strings.Contains(err.Error(), path+":1") {
		t.Fatalf("err = %v, want one naming %s:1", err, path)
	}
	if _, err := Read(filepath.Join(state, "missing.jsonl")); err == nil {
		t.Error("a missing journal read without error")
	}
}

func TestJournalLatestUnfinished(t *testing.T) {
	state := journalTestDir(t)
	if path, _, err := LatestUnfinished(state, "nightly"); err != nil || path != "" {
		t.Fatalf("no runs folder: %q, %v", path, err)
	}
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	run := func(id, batch string, started time.Time, finished bool, torn bool) string {
		c := journalTestLine(t, Event{Time: started, Type: RunStarted, Run: id, Batch: batch}) +
			journalTestLine(t, Event{Time: started, Type: JobStarted, Run: id, Job: "a"})
		if finished {
			c += journalTestLine(t, Event{Time: started, Type: RunFinished, Run: id})
		}
		if torn {
			c += `{"type":"job-fini`
		}
		return journalTestWrite(t, state, id, c)
	}
	run("20261128T020000Z-0001", "nightly", at.AddDate(0, 0, -3), true, false)
	run("20261129T020000Z-0002", "nightly", at.AddDate(0, 0, -2), false, false)
	want := run("20261130T020000Z-0003", "nightly", at.AddDate(0, 0, -1), false, true)
	run("20261201T020000Z-0004", "weekly", at, false, false)
	journalTestWrite(t, state, "20261201T030000Z-0005", "") // created, nothing written yet

	path, events, err := LatestUnfinished(state, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	if path != want {
		t.Fatalf("LatestUnfinished = %s, want %s", path, want)
	}
	if len(events) != 2 || events[0].Batch != "nightly" {
		t.Errorf("events = %+v", events)
	}

	// Once the newest nightly run finishes there is nothing to resume:
	// the abandoned run of the 29th is older than a finished night.
	j, err := Open(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(Event{Type: RunFinished}); err != nil {
		t.Fatal(err)
	}
	if path, _, err := LatestUnfinished(state, "nightly"); err != nil || path != "" {
		t.Errorf("after run-finished: %q, %v; want nothing to resume", path, err)
	}
	if path, _, err := LatestUnfinished(state, "weekly"); err != nil || !strings.HasSuffix(path, "-0004.jsonl") {
		t.Errorf("weekly: %q, %v", path, err)
	}

	// A corrupt journal is not skipped silently.
	bad := journalTestWrite(t, state, "20261201T040000Z-0006", "{bad\n"+journalTestLine(t, Event{Type: RunStarted, Batch: "x"}))
	if _, _, err := LatestUnfinished(state, "nightly"); err == nil || !strings.Contains(err.Error(), bad+":1") {
		t.Errorf("corrupt journal: err = %v, want one naming %s:1", err, bad)
	}
}

// TestReplay: what a resumed or closed run needs besides the plan (which
// folds the journal itself: supervisor's TestPlanFoldsOldJournals holds
// these journals' job states, costs, pauses and outages).
func TestReplay(t *testing.T) {
	cost := func(c float64) *Result { return &Result{CostUSD: c} }
	tests := []struct {
		name   string
		events []Event
		want   RunState
	}{
		{
			name: "done",
			events: []Event{
				{Type: RunStarted},
				{Type: JobStarted, Job: "a", Attempt: 1},
				{Type: JobFinished, Job: "a", Attempt: 1, Status: Done, Result: cost(0.5)},
			},
			want: RunState{Done: map[string]bool{"a": true}, Attempts: map[string]int{"a": 1}},
		},
		{
			name: "failed, retried, done",
			events: []Event{
				{Type: JobStarted, Job: "a", Attempt: 1},
				{Type: JobFinished, Job: "a", Attempt: 1, Status: Failed, Result: cost(0.25)},
				{Type: JobRetried, Job: "a", Attempt: 1, Result: cost(0.25)}, // same attempt: counted once
				{Type: JobStarted, Job: "a", Attempt: 2},
				{Type: JobFinished, Job: "a", Attempt: 2, Status: Done, Result: cost(1)},
			},
			want: RunState{Done: map[string]bool{"a": true}, Attempts: map[string]int{"a": 2}},
		},
		{
			name: "retried without a failed line, crash during the retry",
			events: []Event{
				{Type: JobStarted, Job: "a", Attempt: 1},
				{Type: JobRetried, Job: "a", Attempt: 1, Reason: "exit 1", Result: cost(0.5)},
				{Type: JobStarted, Job: "a", Attempt: 2},
			},
			want: RunState{Attempts: map[string]int{"a": 2}, Running: map[string]bool{"a": true}},
		},
		{
			name: "finally failed",
			events: []Event{
				{Type: JobStarted, Job: "a"},
				{Type: JobFinished, Job: "a", Status: Failed, Result: cost(0.75)},
			},
			want: RunState{Attempts: map[string]int{"a": 1}},
		},
		{
			name: "running at the crash counts an attempt",
			events: []Event{
				{Type: JobStarted, Job: "a", Attempt: 1},
				{Type: JobFinished, Job: "a", Attempt: 1, Status: Done},
				{Type: JobStarted, Job: "b", Attempt: 1},
				{Type: ServerState, Server: "notes", Status: Unhealthy},
			},
			want: RunState{Done: map[string]bool{"a": true}, Attempts: map[string]int{"a": 1, "b": 1},
				Running: map[string]bool{"b": true}},
		},
		{
			name: "skipped and deferred",
			events: []Event{
				{Type: JobDeferred, Job: "a", Reason: "notes is unhealthy"},
				{Type: JobSkipped, Job: "a", Status: Skipped, Reason: "deadline 07:00 passed; notes down since 03:12"},
				{Type: JobSkipped, Job: "b", Status: Skipped, Reason: "needs a, which was skipped"},
				{Type: RunResumed}, // no effect on the jobs
			},
			want: RunState{},
		},
		{
			name: "an attempt stopped for an unusable server ended; a deferral before one ends nothing",
			events: []Event{
				{Type: JobStarted, Job: "a", Attempt: 1},
				{Type: JobDeferred, Job: "a", Attempt: 1, Reason: "lost notes"},
				{Type: JobStarted, Job: "b", Attempt: 1},
				{Type: JobDeferred, Job: "b", Reason: "notes down"},
			},
			want: RunState{Attempts: map[string]int{"a": 1, "b": 1}, Running: map[string]bool{"b": true}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Replay(tc.events)
			got.Started, got.Sessions = time.Time{}, nil // tested on their own
			want := tc.want
			for _, m := range []*map[string]bool{&want.Done, &want.Running} {
				if *m == nil {
					*m = map[string]bool{}
				}
			}
			if want.Attempts == nil {
				want.Attempts = map[string]int{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// FuzzReadJournal feeds arbitrary bytes to the reader. It must never
// panic, and whatever it accepts, Open must leave a journal that
// takes one more event and reads back clean: a resumed run never corrupts
// its own record.
func FuzzRead(f *testing.F) {
	whole := journalTestLine(f, Event{Type: RunStarted, Run: "r", Batch: "nightly"})
	f.Add([]byte(whole))
	f.Add([]byte(whole + `{"type":"job-st`))
	f.Add([]byte(whole + "\x00\x00\x00"))
	f.Add([]byte(whole + "{bad}\n" + whole))
	f.Add([]byte(strings.TrimSuffix(whole, "\n")))
	f.Add([]byte("\n\n" + whole + "\n"))
	f.Add([]byte(`{"type":"job-finished","result":{"total_cost_usd":1e309}}` + "\n"))
	f.Add([]byte(`{"type":"x","time":"not a time"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "r.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		events, _, err := ReadWarnings(path)
		if err != nil {
			return
		}
		_ = Replay(events)
		j, err := Open(path)
		if err != nil {
			t.Fatalf("Open of a readable journal: %v", err)
		}
		if err := j.Append(Event{Type: RunFinished}); err != nil {
			t.Fatal(err)
		}
		again, warnings, err := ReadWarnings(path)
		if err != nil || len(warnings) > 0 {
			t.Fatalf("after resume and append: warnings %q, err %v", warnings, err)
		}
		if len(again) != len(events)+1 || again[len(again)-1].Type != RunFinished {
			t.Fatalf("after append: %d events, want %d ending in run-finished", len(again), len(events)+1)
		}
	})
}

// A journal planted as a symlink is never resumed: resuming cuts a torn
// last line and appends, which would both land in the link's target.
func TestOpenRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "theirs.jsonl")
	content := `{"time":"2026-01-01T02:00:00Z","type":"run-started","run":"r","batch":"b"}` + "\n" + `{"type":"jo`
	if err := os.WriteFile(target, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "runs", "r.jsonl")
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Open through a symlink: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != content {
		t.Errorf("target changed: %q", b)
	}
}
