package healthcheck

import (
	"context"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// TestHoldFor is the hold rule as a table: which outages a call waits for
// instead of being denied at once.
func TestHoldFor(t *testing.T) {
	down := func(code FailureCode, retryIn time.Duration) *Entry {
		return &Entry{Status: StatusUnhealthy, LastFailureCode: code, FailureCount: 1,
			NextRetryAt: MillisOf(t0.Add(retryIn)), UnhealthySince: MillisOf(t0)}
	}
	with := func(e *Entry, change func(*Entry)) *Entry { change(e); return e }
	const maxHold = 2 * time.Minute
	tests := []struct {
		name      string
		e         *Entry
		maxHold   time.Duration
		repairing bool
		want      time.Duration
	}{
		{"transport, retry due within the hold", down(CodeTransport, 30*time.Second), maxHold, false, maxHold},
		{"unavailable, retry due within the hold", down(CodeUnavailable, time.Minute), maxHold, false, maxHold},
		{"session expired", down(CodeSessionExpired, 30*time.Second), maxHold, false, maxHold},
		{"timed out (hung)", down(CodeTimeout, 30*time.Second), maxHold, false, maxHold},
		{"half-open already (retry due now)", down(CodeTransport, -time.Second), maxHold, false, maxHold},
		{"retry due exactly at the hold's end", down(CodeTransport, maxHold), maxHold, false, maxHold},
		{"retry due after the hold: not likely back soon", down(CodeTransport, 10*time.Minute), maxHold, false, 0},
		{"retry due after the hold, but a reconnect repairs it", down(CodeTransport, 10*time.Minute), maxHold, true, maxHold},
		{"rate limited: denied at once", down(CodeRateLimited, 10*time.Second), maxHold, true, 0},
		{"auth required: denied at once", down(CodeAuth, 10*time.Second), maxHold, true, 0},
		{"not an MCP server", down(CodeNotMCP, 10*time.Second), maxHold, false, 0},
		{"unknown class", down(CodeUnknown, 10*time.Second), maxHold, false, 0},
		{"an outage only calls can see: a probe cannot end the hold",
			with(down(CodeUnavailable, 10*time.Second), func(e *Entry) { e.Witness = WitnessCalls }), maxHold, false, 0},
		{"an outage only calls can see, its trial underway: held for the trial's result, within its window",
			with(down(CodeTransport, 30*time.Second), func(e *Entry) { e.Witness, e.TrialAt, e.CheckedAt = WitnessCalls, MillisOf(t0), MillisOf(t0) }),
			maxHold, false, 30 * time.Second},
		{"its trial underway, a window longer than the hold: the hold's bound",
			with(down(CodeTransport, 10*time.Minute), func(e *Entry) { e.Witness, e.TrialAt, e.CheckedAt = WitnessCalls, MillisOf(t0), MillisOf(t0) }),
			maxHold, false, maxHold},
		{"its trial failed (a look after it): denied",
			with(down(CodeTransport, 30*time.Second), func(e *Entry) {
				e.Witness, e.TrialAt, e.CheckedAt = WitnessCalls, MillisOf(t0.Add(-time.Second)), MillisOf(t0)
			}), maxHold, false, 0},
		{"its trial's window over without a result: the next trial decides, no hold",
			with(down(CodeTransport, -time.Second), func(e *Entry) { e.Witness, e.TrialAt, e.CheckedAt = WitnessCalls, MillisOf(t0), MillisOf(t0) }),
			maxHold, false, 0},
		{"its trial underway, but hold off", with(down(CodeTransport, 30*time.Second), func(e *Entry) {
			e.Witness, e.TrialAt, e.CheckedAt = WitnessCalls, MillisOf(t0), MillisOf(t0)
		}), 0, false, 0},
		{"a hold of this outage already waited in vain",
			with(down(CodeTransport, 10*time.Second), func(e *Entry) { e.HoldGaveUpAt = MillisOf(t0) }), maxHold, true, 0},
		{"holding turned off", down(CodeTransport, 10*time.Second), 0, true, 0},
		{"healthy", &Entry{Status: StatusHealthy}, maxHold, true, 0},
		{"never seen", nil, maxHold, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HoldFor(tt.e, t0, tt.maxHold, tt.repairing); got != tt.want {
				t.Errorf("HoldFor = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestDecideHolds: Decide says how long a denied call may wait, by the
// server's own bound, only where a probe can see the server come back.
func TestDecideHolds(t *testing.T) {
	tests := []struct {
		name    string
		answer  probe.Result
		noDef   bool
		maxHold time.Duration
		want    time.Duration
	}{
		{"a probe finds it gone", probe.Result{Verdict: probe.Transport, Reason: "refused"}, false, time.Minute, time.Minute},
		{"a probe finds it unavailable", probe.Result{Verdict: probe.Unavailable, Reason: "503"}, false, 90 * time.Second, 90 * time.Second},
		{"a probe finds it rate limited", probe.Result{Verdict: probe.RateLimited, Reason: "429"}, false, time.Minute, 0},
		{"its hold is off", probe.Result{Verdict: probe.Transport, Reason: "refused"}, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.answer)
			f.c.MaxHold = func(server string) time.Duration {
				if server != "notes" {
					t.Errorf("hold asked for %q", server)
				}
				return tt.maxHold
			}
			d := f.decide()
			if d.Allow || d.Hold != tt.want {
				t.Fatalf("first look: allow %v hold %s, want a denial with hold %s", d.Allow, d.Hold, tt.want)
			}
			// Within the backoff the cache decides alike, without a probe.
			f.now = f.now.Add(time.Second)
			if d := f.decide(); d.Allow || d.Probed || d.Hold != tt.want {
				t.Fatalf("within the backoff: %+v, want hold %s", d, tt.want)
			}
		})
	}
	t.Run("no definition to probe", func(t *testing.T) {
		f := newFixture(t)
		f.c.MaxHold = func(string) time.Duration { return time.Minute }
		f.c.RecordFailure(context.Background(), "notes", nil, "MCP error -32000: Connection closed")
		d := f.c.Decide(context.Background(), "notes", func() *mcpconfig.Server { return nil })
		if d.Allow || d.Hold != 0 {
			t.Fatalf("a server nightwatch cannot probe is not held: %+v", d)
		}
	})
}

// TestRecheck: a held call's look at its server: another holder's verdict
// when one came in, else one probe; a failed probe counts no new failure.
func TestRecheck(t *testing.T) {
	f := newFixture(t,
		probe.Result{Verdict: probe.Transport, Reason: "refused"},
		probe.Result{Verdict: probe.Transport, Reason: "still refused"},
		probe.Result{Verdict: probe.Healthy})
	f.c.MaxHold = func(string) time.Duration { return time.Minute }
	lookup := func() *mcpconfig.Server { return f.srv }
	d := f.decide()
	if d.Allow || d.Hold != time.Minute || f.prober.calls != 1 {
		t.Fatalf("first look: %+v", d)
	}
	seen := d.Entry.CheckedAt
	f.now = f.now.Add(5 * time.Second)
	d = f.c.Recheck(context.Background(), "notes", seen, lookup)
	if d.Allow || d.Hold != time.Minute || f.prober.calls != 2 || d.Entry.FailureCount != 1 ||
		d.Entry.NextRetryAt != MillisOf(t0.Add(30*time.Second)) || d.Entry.LastError != "still refused" {
		t.Fatalf("a failed re-probe must not count: %+v %+v", d, d.Entry)
	}
	// Another holder looks with the verdict it saw before: it takes the
	// newer one without probing.
	if d2 := f.c.Recheck(context.Background(), "notes", seen, lookup); d2.Probed || f.prober.calls != 2 || d2.Hold != time.Minute {
		t.Fatalf("a second holder must not probe again: %+v", d2)
	}
	f.now = f.now.Add(5 * time.Second)
	d = f.c.Recheck(context.Background(), "notes", d.Entry.CheckedAt, lookup)
	if !d.Allow || d.Entry.Status != StatusHealthy || d.Entry.RestoredBy != RestoredByProbe {
		t.Fatalf("the server is back: %+v %+v", d, d.Entry)
	}

	// A hold that gave up: one more failure, and no later call waits.
	g := newFixture(t, probe.Result{Verdict: probe.Transport, Reason: "refused"})
	g.c.MaxHold = func(string) time.Duration { return time.Minute }
	g.decide()
	e := g.c.GiveUpHold("notes")
	if e.FailureCount != 2 || e.HoldGaveUpAt == 0 {
		t.Fatalf("after giving up: %+v", e)
	}
	if d := g.decide(); d.Allow || d.Hold != 0 {
		t.Fatalf("after a hold gave up, the next call is denied at once: %+v", d)
	}
	// The outage ends: the next one may be held again.
	g.c.RecordSuccess("notes", g.srv)
	g.c.RecordFailure(context.Background(), "notes", g.srv, "MCP error -32000: Connection closed")
	if d := g.decide(); d.Allow || d.Hold != time.Minute {
		t.Fatalf("a new outage is held again: %+v %+v", d, d.Entry)
	}

	// A server whose failure becomes a rate limit is no longer held.
	h := newFixture(t, probe.Result{Verdict: probe.Transport, Reason: "refused"},
		probe.Result{Verdict: probe.RateLimited, Reason: "429"})
	h.c.MaxHold = func(string) time.Duration { return time.Minute }
	d = h.decide()
	h.now = h.now.Add(5 * time.Second)
	if d := h.c.Recheck(context.Background(), "notes", d.Entry.CheckedAt, lookup); d.Allow || d.Hold != 0 ||
		d.Entry.LastFailureCode != CodeRateLimited {
		t.Fatalf("rate limited while held: %+v %+v", d, d.Entry)
	}
}
