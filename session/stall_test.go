package session

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
	go watchStall(context.Background(), done, stall, &last, func() { killed <- time.Duration(monoNow() - last.Load()) })
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
