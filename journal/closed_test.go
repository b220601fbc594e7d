package journal

import (
	"testing"
	"time"
)

// A run closed with run-closed is not resumed, as a finished one is not.
func TestLatestUnfinishedSkipsAClosedRun(t *testing.T) {
	state := t.TempDir()
	j, err := Create(state, NewRunID(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(Event{Type: RunStarted, Batch: "nightly"}); err != nil {
		t.Fatal(err)
	}
	if path, _, err := LatestUnfinished(state, "nightly"); err != nil || path != j.Path {
		t.Fatalf("before run-closed: %q, %v; want %q", path, err, j.Path)
	}
	if err := j.Append(Event{Type: RunClosed, Reason: "its deadline passed"}); err != nil {
		t.Fatal(err)
	}
	if path, _, err := LatestUnfinished(state, "nightly"); err != nil || path != "" {
		t.Errorf("after run-closed: %q, %v; want none", path, err)
	}
}
