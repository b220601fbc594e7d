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
	killed := make(chan time.Time, 1)
	done := make(chan struct{})
	go watchStall(context.Background(), done, stall, &last, func() { killed <- time.Now() })
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
