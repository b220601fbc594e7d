package healthcheck

import (
	"context"
	"fmt"
	"time"

	// The probe vocabulary only: healthcheck links no prober (the hook's
	// hot path decides without net/http); callers pass probe.Probe.
	probe "github.com/nightwatch-dev/nightwatch/healthcheck/verdict"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// Hold, don't deny: a call to a server that is down but being repaired, or
// likely back soon, waits in its PreToolUse hook for the server instead of
// being denied (reference claude-code-in-flight §1). The call has not been
// sent, so holding it can never run it twice. This file is the rule and the
// re-probe the hook's wait is made of; the wait itself is the hook's.

// DefaultMaxHold is how long a call is held by default, and MaxMaxHold the
// most a setting may ask for: both supported CLIs let a hook run 600 s
// without a timeout field, and a longer hold would outlast the night's
// stall timer and the model's patience alike.
const (
	DefaultMaxHold = 2 * time.Minute
	MaxMaxHold     = 5 * time.Minute
)

// HoldInterval is the most a holding hook waits between two probes.
const HoldInterval = 5 * time.Second

// Holdable says whether a server down for this class of failure may come
// back by itself or by a restart within a hold: its process or connection
// is gone (transport), it said it cannot serve now (unavailable), it forgot
// the session (session-expired) or it hung (timeout). A rate-limited server
// comes back when its quota does, and a server that refuses the
// credentials when someone fixes them: calls to those are denied at once.
func Holdable(code FailureCode) bool {
	switch code {
	case CodeTransport, CodeUnavailable, CodeSessionExpired, CodeTimeout:
		return true
	}
	return false
}

// HoldFor is how long a call to the server of e may be held at now (0: deny
// it at once). A call is held when the outage is one a probe sees end
// (WitnessProbe: a hold ends on a healthy probe, and an outage only calls
// can see is ended by a trial call, which a held call is not), of a class a
// restart can fix (Holdable), no hold of this outage has already waited in
// vain, and the server is being repaired (a reconnect command is
// configured, and ran or runs when the outage was seen) or its next retry
// is due within the hold.
//
// An outage only calls can see (WitnessCalls) is held only while its one
// trial call is underway (TrialUnderway: on this host or, through the
// cluster's shared health, on another), for the trial's result, at most
// until the trial's window ends.
func HoldFor(e *Entry, now time.Time, maxHold time.Duration, repairing bool) time.Duration {
	switch {
	case maxHold <= 0, e == nil, e.Status != StatusUnhealthy,
		!Holdable(e.LastFailureCode), e.HoldGaveUpAt != 0:
		return 0
	case e.Witness == WitnessCalls:
		if TrialUnderway(e, now) {
			return min(maxHold, e.NextRetryAt.Time().Sub(now))
		}
		return 0
	case e.Witness != WitnessProbe:
		return 0
	case repairing, e.NextRetryAt.Time().Sub(now) <= maxHold:
		return maxHold
	}
	return 0
}

// TrialUnderway says whether e's one trial call has started and its
// result has not come: the entry's last look is the trial's start, and
// the window the trial opened has not ended.
func TrialUnderway(e *Entry, now time.Time) bool {
	return e != nil && e.Status == StatusUnhealthy && e.Witness == WitnessCalls &&
		e.TrialAt != 0 && e.TrialAt >= e.CheckedAt && e.NextRetryAt > MillisOf(now)
}

// trialHold is the hold of a call that lost the cluster's trial claim of
// server to another host, whose start of the trial may not be in this
// host's cache yet: the trial's window (the claim's), at most the
// server's max hold.
func (c *Checker) trialHold(server string, e *Entry) time.Duration {
	if c.MaxHold == nil || e == nil || e.HoldGaveUpAt != 0 || !Holdable(e.LastFailureCode) {
		return 0
	}
	return min(c.MaxHold(server), c.Settings.BackoffFor(max(e.FailureCount, 1)))
}

// recheckTrial is Recheck of a call held for the trial of an outage only
// calls can see: no probe (it cannot see such an outage end), the cache's
// word on the trial. Its window over without a result: this call may be
// the next trial (or holds on for another's).
func (c *Checker) recheckTrial(ctx context.Context, server string, e *Entry) Decision {
	now := c.now()
	switch {
	case GateOf(e, now) == GateTrial:
		return c.trial(ctx, server)
	case TrialUnderway(e, now):
		return Decision{Allow: false, Server: server, Entry: e, Hold: c.HoldFor(server, e), AwaitsTrial: true}
	}
	return Decision{Allow: false, Server: server, Entry: e} // the trial failed: its verdict stands
}

// HoldFor is the hold of a call to server whose entry is e, by HoldFor with
// the server's own max hold and whether it has a reconnect command.
func (c *Checker) HoldFor(server string, e *Entry) time.Duration {
	if c.MaxHold == nil {
		return 0
	}
	repairing := c.Reconnect != nil && c.HaveReconnect != nil && c.HaveReconnect(server)
	return HoldFor(e, c.now(), c.MaxHold(server), repairing)
}

// probeableHold is HoldFor for a server a probe can see come back: one
// nightwatch has a definition of, with a probe to ask it.
//
// A trial underway needs no probe: its result ends the hold.
func (c *Checker) probeableHold(server string, e *Entry, lookup func() *mcpconfig.Server) time.Duration {
	h := c.HoldFor(server, e)
	if TrialUnderway(e, c.now()) {
		return h
	}
	if h == 0 || c.Probe == nil || lookup == nil || lookup() == nil {
		return 0
	}
	return h
}

// Recheck is one look at a held server: the verdict of another process's
// probe if one came in since the holder last looked (seen is the CheckedAt
// it saw), else one probe of its own, one per server at a time (the probe
// lock: concurrent holders wait for its verdict). A healthy probe ends the
// outage and allows the call; a failed one is recorded without counting a
// new failure (a hold probes every few seconds, and each failure would
// double the backoff) and says how much longer the call may be held.
func (c *Checker) Recheck(ctx context.Context, server string, seen Millis, lookup func() *mcpconfig.Server) Decision {
	if e := c.read().Entry(server); e != nil && e.Status == StatusUnhealthy && e.Witness == WitnessCalls {
		return c.recheckTrial(ctx, server, e)
	}
	wait := c.ProbeWait
	if wait <= 0 {
		wait = DefaultProbeWait
	}
	lock, ok, err := c.Store.AcquireProbe(ctx, server, wait)
	if err == nil && ok {
		defer lock.Release()
	}
	e := c.read().Entry(server)
	if e == nil || e.Status != StatusUnhealthy {
		return Decision{Allow: true, Server: server, Entry: e}
	}
	if e.CheckedAt > seen {
		return Decision{Allow: false, Server: server, Entry: e, Hold: c.HoldFor(server, e)}
	}
	var srv *mcpconfig.Server
	if lookup != nil {
		srv = lookup()
	}
	if srv == nil || c.Probe == nil {
		return Decision{Allow: false, Server: server, Entry: e}
	}
	res := c.Probe(ctx, srv)
	if res.Verdict == probe.Unsupported {
		return Decision{Allow: true, Server: server, Unchecked: true, Probed: true, Entry: e,
			Note: fmt.Sprintf("MCP server %q: %s; it has passive health only (its calls are watched)", server, res.Reason)}
	}
	if Reachable(srv, res) {
		after := c.record(server, func(p *Entry, now time.Time) Entry {
			n := c.Settings.ProbeHealthy(p, now, RestoredByProbe)
			stamp(&n, srv, res)
			return n
		}, Event{By: ByProbe, Verdict: string(res.Verdict)})
		return Decision{Allow: after.Status == StatusHealthy, Server: server, Entry: after, Probed: true,
			Hold: c.HoldFor(server, after)}
	}
	code := CodeOfVerdict(res.Verdict)
	if slowStart(srv, res, c.Settings.withDefaults().ClientStartup) {
		code = e.LastFailureCode // slow to start is no new class
	}
	after := c.record(server, func(p *Entry, now time.Time) Entry {
		n := c.Settings.StillDown(p, now, Failure{Code: code, Reason: res.Reason, RefusedBy: refusedBy(res)})
		stamp(&n, srv, res)
		return n
	}, Event{By: ByProbe, Verdict: string(res.Verdict), Code: string(code), Reason: res.Reason})
	return Decision{Allow: false, Server: server, Entry: after, Probed: true, Hold: c.HoldFor(server, after)}
}

// GiveUpHold records that a call held for server waited its whole hold and
// the server did not come back: the outage counts one more failure (the
// next backoff), and no later call waits for it again (HoldGaveUpAt). It
// returns the entry the call is denied with.
func (c *Checker) GiveUpHold(server string) *Entry {
	var after Entry
	err := c.update(func(f *File) error {
		prev := f.Entry(server)
		if prev == nil || prev.Status != StatusUnhealthy {
			if prev != nil {
				after = *prev
			}
			return nil
		}
		after = c.Settings.GiveUpHold(*prev, c.now())
		f.Servers[server] = &after
		return nil
	})
	if err != nil {
		c.warn(fmt.Sprintf("nightwatch: cannot save the end of the hold of %s: %v", server, err))
	}
	return &after
}

// StillDown records another failed look at a server that is already down,
// without counting it: the class and reason may change (a held server that
// now answers 429 is no longer held), the backoff does not.
func (s Settings) StillDown(prev *Entry, now time.Time, f Failure) Entry {
	if prev == nil || prev.Status != StatusUnhealthy {
		return s.MarkUnhealthy(prev, now, f)
	}
	e := *prev
	e.CheckedAt = MillisOf(now)
	e.noteRefused(e.CheckedAt, f.RefusedBy)
	e.LastError = f.Reason
	if f.Code != "" && f.Code != e.LastFailureCode {
		e.LastFailureCode = f.Code
		e.articleCode = ""
	}
	if f.RetryAfter > 0 {
		e.NextRetryAt = MillisOf(now.Add(min(f.RetryAfter, s.withDefaults().MaxRetryAfter)))
	}
	return e
}

// GiveUpHold is the end of a hold the server did not come back in: one
// more failure with its backoff, and HoldGaveUpAt set.
func (s Settings) GiveUpHold(prev Entry, now time.Time) Entry {
	e := s.MarkUnhealthy(&prev, now, Failure{Code: prev.LastFailureCode, Reason: prev.LastError, Witness: prev.Witness})
	e.HoldGaveUpAt = MillisOf(now)
	return e
}
