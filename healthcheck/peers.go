package healthcheck

import (
	"context"
	"fmt"
	"time"
)

// Kinds of claim a Checker asks its Peers for.
const (
	// ClaimProbe is the one probe of a server whose verdict ran out.
	ClaimProbe = "probe"
	// ClaimTrial is the one trial call through a half-open server.
	ClaimTrial = "trial"
)

// Peers are the other hosts of a cluster, as far as one Checker needs
// them: the single-flight probe and the half-open trial must hold across
// hosts, not only across the processes of one (the probe lock and the
// cache lock do that). A Checker without Peers is a single host.
type Peers interface {
	// Claim asks for the one probe (kind ClaimProbe) or trial
	// (ClaimTrial) of server across hosts, for at most ttl. ok says
	// whether it was granted; when it was not, holder names who has it.
	// release gives a granted claim back early (never nil when ok). err
	// means the cluster could not be asked: the caller decides as a
	// single host.
	Claim(ctx context.Context, server, kind string, ttl time.Duration) (release func(), ok bool, holder string, err error)
}

// peerPoll is how often a Checker looks at its cache for the verdict of a
// probe another host is running (the relay writes it there), and
// peerReclaim how often it asks for the claim again meanwhile, so that a
// probe that ended without a verdict (a server it could not check) does
// not make everyone wait the whole ProbeWait.
const (
	peerPoll    = 25 * time.Millisecond
	peerReclaim = 250 * time.Millisecond
)

// claimProbe takes the cross-host probe claim of server, after the local
// probe lock. It returns a decision when another host's verdict arrived
// while waiting (done), else the release of the claim (nil when none is
// held) and the probe goes ahead here.
func (c *Checker) claimProbe(ctx context.Context, server string, wait time.Duration) (d Decision, done bool, release func()) {
	rel, ok, holder, err := c.Peers.Claim(ctx, server, ClaimProbe, wait)
	if err != nil {
		c.warn(fmt.Sprintf("nightwatch: cannot ask the cluster who probes %s: %v; probing it as a single host", server, err))
		return Decision{}, false, nil
	}
	if ok {
		return Decision{}, false, rel
	}
	deadline := time.Now().Add(wait)
	lastClaim := time.Now()
	t := time.NewTimer(peerPoll)
	defer t.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			c.warn(fmt.Sprintf("nightwatch: stopped waiting for host %s's probe of %s (%v); probing it here", holder, server, ctx.Err()))
			return Decision{}, false, nil
		case <-t.C:
		}
		switch g, e := c.Gate(server); g {
		case GateAllow, GateBlock:
			return Decision{Allow: g == GateAllow, Server: server, Entry: e}, true, nil
		case GateTrial:
			return c.trial(ctx, server), true, nil
		}
		if time.Since(lastClaim) >= peerReclaim {
			lastClaim = time.Now()
			rel, ok, h, err := c.Peers.Claim(ctx, server, ClaimProbe, wait)
			if err == nil && ok {
				return Decision{}, false, rel
			}
			if err == nil {
				holder = h
			}
		}
		t.Reset(peerPoll)
	}
	c.warn(fmt.Sprintf("nightwatch: host %s has been probing %s for over %s and no verdict arrived; probing it here too", holder, server, wait))
	return Decision{}, false, nil
}

// claimTrial asks the cluster for the one trial of server, for the backoff
// window the trial opens. ok false: another host has it, and this call is
// blocked like the loser of the local race. A claim that cannot be asked
// is said out loud and the trial is decided as on a single host.
func (c *Checker) claimTrial(ctx context.Context, server string, e *Entry) (release func(), ok bool, holder string) {
	failures := 1
	if e != nil {
		failures = e.FailureCount
	}
	rel, ok, holder, err := c.Peers.Claim(ctx, server, ClaimTrial, c.Settings.BackoffFor(failures))
	if err != nil {
		c.warn(fmt.Sprintf("nightwatch: cannot ask the cluster whether another host runs the trial call of %s: %v; deciding as a single host", server, err))
		return func() {}, true, ""
	}
	if !ok {
		return nil, false, holder
	}
	return rel, true, ""

}
