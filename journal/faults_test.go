package journal

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A journal replaced by a folder mid-run cannot be written: Append fails
// with ErrBroken, keeps the line (and every later one, in order) in the
// lost file, and Read adds them back after the journal's own lines.
func TestAppendKeepsLinesTheJournalCannotTake(t *testing.T) {
	dir := t.TempDir()
	j, err := Create(dir, "r1")
	if err != nil {
		t.Fatal(err)
	}
	must := mustOK(t)
	must(j.Append(Event{Type: RunStarted, Batch: "b"}))
	must(j.Append(Event{Type: JobFinished, Job: "a", Status: Done}))
	data, _ := os.ReadFile(j.Path)
	must(os.Remove(j.Path))
	must(os.Mkdir(j.Path, 0o700))
	for _, job := range []string{"b", "c"} {
		err := j.Append(Event{Type: JobFinished, Job: job, Status: Done})
		if err == nil || !strings.Contains(err.Error(), "kept in") {
			t.Fatalf("append to a folder: %v", err)
		}
	}
	if j.Broken() == nil {
		t.Error("Broken is nil")
	}
	must(os.Remove(j.Path))
	must(os.WriteFile(j.Path, data, 0o600))
	events, warnings, err := ReadWarnings(j.Path)
	must(err)
	st := Replay(events)
	if !st.Done["a"] || !st.Done["b"] || !st.Done["c"] || len(warnings) == 0 {
		t.Errorf("done %v, warnings %v", st.Done, warnings)
	}
	// Resuming folds the lost lines back in.
	r, err := Open(j.Path)
	must(err)
	if _, err := os.Stat(LostPath(j.Path)); !os.IsNotExist(err) || r.Repaired == "" {
		t.Errorf("lost file after Open: %v; repaired %q", err, r.Repaired)
	}
	events, err = Read(j.Path)
	must(err)
	if len(events) != 4 {
		t.Errorf("%d events after folding, want 4", len(events))
	}
}

// A journal deleted mid-run is written anew, run-started line first, and
// Warn says so.
func TestAppendRecreatesADeletedJournal(t *testing.T) {
	dir := t.TempDir()
	j, err := Create(dir, "r1")
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	j.Warn = func(s string) { warned = append(warned, s) }
	_ = j.Append(Event{Type: RunStarted, Batch: "b", Time: time.Now()})
	_ = j.Append(Event{Type: JobFinished, Job: "a", Status: Done})
	if err := os.Remove(j.Path); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(Event{Type: JobFinished, Job: "b", Status: Done}); err != nil {
		t.Fatal(err)
	}
	events, err := Read(j.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 || events[0].Type != RunStarted || len(warned) != 1 {
		t.Errorf("events %+v, warned %v", events, warned)
	}
}

// scan's torn text: a glued torn write is left out and the event after it
// kept; garbage in the middle stays an error.
func TestScanTornText(t *testing.T) {
	ok := `{"type":"run-started"}` + "\n"
	tests := []struct {
		name, data string
		events     int
		torn       int
		err        bool
	}{
		{"whole", ok + ok, 2, 0, false},
		{"torn last", ok + `{"type":"job-`, 1, 1, false},
		{"glued", ok + `{"type":"job-fi{"type":"job-started","job":"a"}` + "\n" + ok, 3, 1, false},
		{"garbage mid-file", ok + "garbage\n" + ok, 0, 0, true},
		{"NUL padding", ok + "\x00\x00\x00", 1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := scan(filepath.Join("x", "j.jsonl"), []byte(tt.data))
			if (sc.err != nil) != tt.err || (!tt.err && (len(sc.events) != tt.events || len(sc.torn) != tt.torn)) {
				t.Errorf("events %d torn %d err %v", len(sc.events), len(sc.torn), sc.err)
			}
		})
	}
}

func FuzzScan(f *testing.F) {
	f.Add([]byte(`{"type":"run-started"}` + "\n" + `{"type":"jo{"type":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := scan("j", data)
		if len(sc.events) != len(sc.lines) {
			t.Fatalf("%d events, %d lines", len(sc.events), len(sc.lines))
		}
		for _, l := range sc.lines {
			if _, err := parse(l); err != nil {
				t.Fatalf("kept a line that does not parse: %q", l)
			}
		}
	})
}

// A line whose write failed after it reached the journal (its fsync) is
// in both files: it is read once.
func TestLostLineAlsoInTheJournalIsReadOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.jsonl")
	started := `{"type":"run-started","batch":"b"}`
	done := `{"type":"job-finished","job":"a","status":"done"}`
	if err := os.WriteFile(path, []byte(started+"\n"+done+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(LostPath(path), []byte(done+"\n"+`{"type":"job-finished","job":"b","status":"done"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	events, err := Read(path)
	if err != nil || len(events) != 3 {
		t.Fatalf("%d events, %v", len(events), err)
	}
	if _, err := Open(path); err != nil {
		t.Fatal(err)
	}
	if events, err := Read(path); err != nil || len(events) != 3 {
		t.Errorf("after Open: %d events, %v", len(events), err)
	}
}

// A damaged journal blocks a batch's resume only when it may be that
// batch's newest run: another batch's, or an older one of the same batch,
// does not.
func TestDamagedJournalBlocksOnlyItsOwnNewestRun(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	if err := os.MkdirAll(runs, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(runs, name+".jsonl"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	started := func(batch, at string) string {
		return `{"type":"run-started","batch":"` + batch + `","time":"` + at + `"}` + "\n"
	}
	write("20260101T010000Z-0001", started("b", "2026-01-01T01:00:00Z")+"garbage\n"+`{"type":"run-finished"}`+"\n")
	write("20260102T010000Z-0002", started("b", "2026-01-02T01:00:00Z")+`{"type":"job-started","job":"a","attempt":1}`+"\n")
	write("20260103T010000Z-0003", started("other", "2026-01-03T01:00:00Z")+"garbage\n"+`{"type":"run-finished"}`+"\n")
	path, _, err := LatestUnfinished(dir, "b")
	if err != nil || filepath.Base(path) != "20260102T010000Z-0002.jsonl" {
		t.Errorf("LatestUnfinished(b) = %q, %v", path, err)
	}
	write("20260104T010000Z-0004", "garbage\n"+started("b", "2026-01-04T01:00:00Z"))
	if _, _, err := LatestUnfinished(dir, "b"); err == nil {
		t.Error("a damaged journal that may be b's newest run was passed over")
	}
}

// The journal file stays open between lines, but a line always goes to
// the file at the journal's path, or nowhere: a journal deleted or renamed
// over mid-run is written anew (Warn says so) with every line of the run,
// and one replaced by a symlink breaks the journal (the line kept in the
// lost file) without the link's target being written. Each case swaps the
// file after a line and again after an fsync, when the old file is open.
func TestKeptOpenJournalFollowsItsPath(t *testing.T) {
	cases := []struct {
		name   string
		swap   func(t *testing.T, path string)
		broken bool
	}{
		{"deleted", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"renamed over by another file", func(t *testing.T, path string) {
			other := filepath.Join(filepath.Dir(path), "other")
			if err := os.WriteFile(other, []byte(`{"type":"run-started","run":"theirs"}`+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"replaced by a symlink", func(t *testing.T, path string) {
			target := filepath.Join(filepath.Dir(path), "target")
			if err := os.WriteFile(target, []byte("theirs\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Skipf("symlink: %v", err)
			}
			// Wine's os.Symlink "succeeds" without a link Lstat sees
			// (scripts/wine-test.sh): there is no symlink to refuse.
			if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Skipf("this platform made no symlink Lstat sees (%v)", err)
			}
		}, true},
	}
	for _, c := range cases {
		for _, after := range []string{"line", "fsync"} {
			t.Run(c.name+" after a "+after, func(t *testing.T) {
				j, err := Create(journalTestDir(t), "r1")
				if err != nil {
					t.Fatal(err)
				}
				defer j.Close()
				var warned []string
				j.Warn = func(s string) { warned = append(warned, s) }
				if err := j.Append(Event{Type: RunStarted, Batch: "b"}); err != nil {
					t.Fatal(err)
				}
				if err := j.AppendLater(Event{Type: JobStarted, Job: "a", Attempt: 1}); err != nil {
					t.Fatal(err)
				}
				if after == "fsync" {
					if err := j.Sync(); err != nil {
						t.Fatal(err)
					}
				}
				c.swap(t, j.Path)
				err = j.AppendLater(Event{Type: JobFinished, Job: "a", Attempt: 1, Status: Done})
				if err == nil {
					err = j.Sync()
				}
				if c.broken {
					if !errors.Is(err, ErrBroken) {
						t.Fatalf("a line after the swap: %v", err)
					}
					if b, _ := os.ReadFile(filepath.Join(filepath.Dir(j.Path), "target")); string(b) != "theirs\n" {
						t.Errorf("the symlink's target was written: %q", b)
					}
					lost, err := os.ReadFile(LostPath(j.Path))
					if err != nil || !strings.Contains(string(lost), `"job-finished"`) {
						t.Errorf("lost file %q (%v)", lost, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				events, err := Read(j.Path)
				if err != nil {
					t.Fatal(err)
				}
				var types []Type
				for _, ev := range events {
					types = append(types, ev.Type)
				}
				if want := []Type{RunStarted, JobStarted, JobFinished}; !slices.Equal(types, want) || events[0].Run != "r1" {
					t.Errorf("journal after the swap: %v (run %q), want %v of r1", types, events[0].Run, want)
				}
				if len(warned) != 1 {
					t.Errorf("warned %q, want once", warned)
				}
			})
		}
	}
}

// mustOK returns a check that ends the test on an error.
func mustOK(t *testing.T) func(error) {
	return func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}
