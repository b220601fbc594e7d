package session

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
)

// The stall watchdog measures idle time on the monotonic clock: its stamps
// are monoNow readings, whose anchor carries a monotonic reading, so a
// forward jump of the wall clock cannot age a session's output. Before:
// idle time was time.Since(time.Unix(0, wall-clock stamp)) and a clock
// jump killed healthy sessions as stalled.
func TestStallWatchdogUsesTheMonotonicClock(t *testing.T) {
	if !strings.Contains(monoStart.String(), "m=") {
		t.Fatalf("the watchdog's anchor has no monotonic reading: %s", monoStart)
	}
	const stall = 300 * time.Millisecond
	var last atomic.Int64
	last.Store(monoNow())
	killed := make(chan time.Time, 1)
	done := make(chan struct{})
	go watchStall(context.Background(), done, stall, &last, nil, func() { killed <- time.Now() })
	// Output every 50 ms for a second: never a stall.
	var quiet time.Time // when the last output was stamped
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		last.Store(monoNow())
		quiet = time.Now()
		select {
		case <-killed:
			t.Fatal("a session with steady output was killed as stalled")
		default:
		}
	}
	select {
	case at := <-killed:
		// Measured from the last stamp, not from the end of the loop; the
		// upper bound is generous for a loaded machine.
		if d := at.Sub(quiet); d < stall-20*time.Millisecond || d > stall+2*time.Second {
			t.Errorf("killed %s after the output stopped, want about %s", d, stall)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a quiet session was never killed")
	}
	close(done)
	// A stamp from the wall clock (what the watchdog used before) is not
	// what it reads now: mixing the two would kill at once.
	if d := time.Duration(monoNow() - last.Load()); d < 0 || d > time.Minute {
		t.Errorf("idle %s: the stamps are not monotonic offsets", d)
	}
}

// A hook holding a call writes a holding line to the batch's events file
// and nothing to the stream (2.1.197): the watchdog counts this session's
// lines as output, and only this session's. Before: a hold longer than
// stall_timeout killed the session as stalled.
func TestStallWatchdogCountsHoldLines(t *testing.T) {
	dir := t.TempDir()
	events := &healthcheck.EventLog{Path: filepath.Join(dir, "events.jsonl")}
	holds := &holdLines{tail: healthcheck.EventTail{Path: events.Path}, dir: dir}
	holds.tail.SkipToEnd()
	const stall = 300 * time.Millisecond
	var last atomic.Int64
	last.Store(monoNow())
	killed := make(chan time.Time, 1)
	done := make(chan struct{})
	defer close(done)
	go watchStall(context.Background(), done, stall, &last, holds.latest, func() { killed <- time.Now() })
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		events.Append(healthcheck.Event{Time: time.Now(), Kind: healthcheck.EventHolding, Server: "notes", Dir: dir})
		// Another session's hold is not this one's output.
		events.Append(healthcheck.Event{Time: time.Now(), Kind: healthcheck.EventHolding, Server: "notes", Dir: dir + "-other"})
		select {
		case <-killed:
			t.Fatal("a session whose hook was holding a call was killed as stalled")
		default:
		}
	}
	// Only the other session's lines from here on: this one stalls.
	stopOther := make(chan struct{})
	defer close(stopOther)
	go func() {
		for {
			select {
			case <-stopOther:
				return
			case <-time.After(50 * time.Millisecond):
				events.Append(healthcheck.Event{Time: time.Now(), Kind: healthcheck.EventHeld, Server: "notes", Dir: dir + "-other"})
			}
		}
	}()
	select {
	case <-killed:
	case <-time.After(10 * time.Second):
		t.Fatal("a quiet session was never killed")
	}
}
