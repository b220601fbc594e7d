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
	// The kill reports how old the last stamp was when it came; only the
	// quiet phase below, with no writer, reads that age.
	killed := make(chan time.Duration, 1)
	done := make(chan struct{})
	defer close(done)
	go watchStall(context.Background(), done, stall, &last, nil, func() { killed <- time.Duration(monoNow() - last.Load()) })
	// Output every 50 ms for a second. The writer notes the longest its
	// output went quiet (the gap still open included) each time it looks:
	// a kill while that stayed under the stall is a watchdog that does not
	// measure from the last stamp. A busy machine may hold the writer past
	// the stall; then the kill was right, and is all this run can show.
	var longest time.Duration
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		stamp := last.Load()
		select {
		case <-killed:
			longest = max(longest, time.Duration(monoNow()-stamp))
			if longest < stall {
				t.Fatalf("killed as stalled with output at most %s old, under the %s stall", longest, stall)
			}
			t.Logf("the writer was held %s (over the %s stall) on this machine: a kill was due", longest, stall)
			return
		default:
		}
		now := monoNow()
		longest = max(longest, time.Duration(now-stamp))
		last.Store(now)
	}
	// Quiet now: the watchdog must end it. A minute means it never would.
	select {
	case idle := <-killed:
		if idle < stall {
			t.Errorf("killed %s after the output stopped, before the %s stall", idle, stall)
		}
	case <-time.After(time.Minute):
		t.Fatal("a quiet session was never killed")
	}
	// A stamp from the wall clock (what the watchdog used before) is not
	// what it reads now: a wall-clock stamp lies decades ahead of monoNow.
	if d := time.Duration(monoNow() - last.Load()); d < 0 {
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
