package journal

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
)

// countSyncs makes the journal's fsyncs go through fail (nil: they
// succeed) for one test, and counts them.
func countSyncs(t *testing.T, fail func() error) *int {
	t.Helper()
	n := new(int)
	real := syncFile
	syncFile = func(out *atomicfile.Appender) error {
		*n++
		if fail != nil {
			if err := fail(); err != nil {
				return err
			}
		}
		return real(out)
	}
	t.Cleanup(func() { syncFile = real })
	return n
}

// AppendLater writes the line at once and leaves its fsync to Sync; one
// fsync makes every line written before it durable, and Sync does none
// when no line needs one (a volatile line alone does not).
func TestAppendLaterIsDurableAtSync(t *testing.T) {
	type op struct {
		do       string // "later", "append" (Append), "sync"
		typ      Type
		fsyncs   int // the journal's fsyncs after the step
		unsynced int // lines waiting for their fsync after the step
	}
	cases := []struct {
		name string
		ops  []op
	}{
		{"lines written together cost one fsync", []op{
			{"later", JobFinished, 0, 1}, {"later", JobStarted, 0, 2}, {"sync", "", 1, 0}, {"sync", "", 1, 0}}},
		{"a volatile line alone needs none", []op{
			{"later", SessionProcess, 0, 0}, {"sync", "", 0, 0}, {"append", SessionProcess, 0, 0}, {"sync", "", 0, 0}}},
		{"a volatile line among others is made durable with them", []op{
			{"later", JobStarted, 0, 1}, {"later", SessionProcess, 0, 1}, {"sync", "", 1, 0}, {"sync", "", 1, 0}}},
		{"an fsynced Append makes the earlier lines durable", []op{
			{"later", JobFinished, 0, 1}, {"append", RunFinished, 1, 0}, {"sync", "", 1, 0}}},
		{"nothing written, nothing synced", []op{{"sync", "", 0, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			counted := countSyncs(t, nil)
			j, err := Create(journalTestDir(t), "r1")
			if err != nil {
				t.Fatal(err)
			}
			wrote := 0
			for i, o := range c.ops {
				switch o.do {
				case "later":
					err = j.AppendLater(Event{Type: o.typ, Job: "a", Attempt: 1})
					wrote++
				case "append":
					err = j.Append(Event{Type: o.typ, Job: "a", Attempt: 1})
					wrote++
				case "sync":
					err = j.Sync()
				}
				if err != nil {
					t.Fatalf("step %d (%s): %v", i, o.do, err)
				}
				if j.Fsyncs() != o.fsyncs || *counted != o.fsyncs || j.Unsynced() != o.unsynced {
					t.Fatalf("step %d (%s %s): %d fsyncs (%d counted), %d unsynced; want %d, %d", i, o.do, o.typ,
						j.Fsyncs(), *counted, j.Unsynced(), o.fsyncs, o.unsynced)
				}
				// Every line is in the file as soon as it is written.
				events, err := Read(j.Path)
				if err != nil || len(events) != wrote {
					t.Fatalf("step %d: the file has %d events (%v), want %d", i, len(events), err, wrote)
				}
			}
		})
	}
}

// An fsync that fails breaks the journal as a failed write does: the
// lines written since the last fsync (a volatile one among them) are kept
// in the lost file, and each is read once, whether the journal file kept
// them all or the machine lost the last ones; later lines go to the lost
// file too, and Open folds them back in.
func TestFailedSyncKeepsTheLinesNotYetDurable(t *testing.T) {
	for _, dropped := range []int{0, 1, 3} {
		t.Run(map[int]string{0: "journal kept them", 1: "journal lost the last", 3: "journal lost all three"}[dropped], func(t *testing.T) {
			fail := false
			countSyncs(t, func() error {
				if fail {
					return errors.New("EIO")
				}
				return nil
			})
			j, err := Create(journalTestDir(t), "r1")
			if err != nil {
				t.Fatal(err)
			}
			must := mustOK(t)
			must(j.Append(Event{Type: RunStarted, Batch: "b"}))
			must(j.AppendLater(Event{Type: JobStarted, Job: "a", Attempt: 1}))
			must(j.AppendLater(Event{Type: SessionProcess, Job: "a", Attempt: 1, PID: 42}))
			must(j.AppendLater(Event{Type: JobFinished, Job: "a", Attempt: 1, Status: Done}))
			fail = true
			err = j.Sync()
			if !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "kept in") {
				t.Fatalf("Sync with a failing fsync: %v", err)
			}
			if j.Broken() == nil || j.Unsynced() != 0 {
				t.Errorf("after a failed fsync: broken %v, %d lines unsynced", j.Broken(), j.Unsynced())
			}
			err = j.AppendLater(Event{Type: JobStarted, Job: "b", Attempt: 1})
			if !errors.Is(err, ErrBroken) {
				t.Fatalf("AppendLater after a failed fsync: %v", err)
			}
			// What the machine kept of the journal: the last `dropped`
			// lines written since the fsync before may be gone.
			data, err := os.ReadFile(j.Path)
			must(err)
			lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
			if dropped > 0 {
				if len(lines) != 4 {
					t.Fatalf("the journal has %d lines, want 4", len(lines))
				}
				must(os.WriteFile(j.Path, []byte(strings.Join(lines[:len(lines)-dropped], "")), 0o600))
			}
			want := []Type{RunStarted, JobStarted, SessionProcess, JobFinished, JobStarted}
			check := func(when string) {
				t.Helper()
				events, err := Read(j.Path)
				must(err)
				var got []Type
				for _, ev := range events {
					got = append(got, ev.Type)
				}
				if strings.Join(typeStrings(got), ",") != strings.Join(typeStrings(want), ",") {
					t.Errorf("%s: read %v, want %v", when, got, want)
				}
			}
			check("Read")
			if _, err := Open(j.Path); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(LostPath(j.Path)); !os.IsNotExist(err) {
				t.Errorf("the lost file after Open: %v", err)
			}
			check("after Open")
		})
	}
}

func typeStrings(ts []Type) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}
