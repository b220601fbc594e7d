package healthcheck

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	// The probe vocabulary only: healthcheck links no prober (the hook's
	// hot path decides without net/http); callers pass probe.Probe.
	probe "github.com/nightwatch-dev/nightwatch/healthcheck/verdict"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// ReconnectResult is the outcome of one reconnect command.
type ReconnectResult struct {
	Attempted bool
	OK        bool
	// Detail is short, redacted text for logs and lastError.
	Detail string
}

// Checker makes the PreToolUse decision and records what real calls teach.
// Every dependency is a field so that tests and the supervisor can replace
// it, as go-retryablehttp does with its policies.
type Checker struct {
	Store    *Store
	Settings Settings
	Now      func() time.Time
	// Probe asks one server; the hook passes probe.Probe with its options.
	Probe func(ctx context.Context, srv *mcpconfig.Server) probe.Result
	// Policy maps a failure to an action (DefaultPolicy).
	Policy Policy
	// HaveReconnect says whether a reconnect command is configured.
	HaveReconnect func(server string) bool
	// Reconnect runs the server's reconnect command.
	Reconnect func(ctx context.Context, server string) ReconnectResult
	// ProbeWait bounds how long a hook waits for another hook's probe of
	// the same server before probing itself.
	ProbeWait time.Duration
	Events    *EventLog
	// Warn says out loud what must not stay silent (stderr in the hook).
	Warn func(string)
	// Redact removes secrets from every reason before it is stored or
	// written to the events file.
	Redact func(string) string
	// StartsTrials is set by the hook, which decides for a real call: at a
	// half-open server whose outage only calls can see, Decide lets that
	// call through as the one trial. Everyone else (the night's check
	// before it launches a job, maintenance, status) leaves the trial to
	// the next real call: Decide says the server may be called and starts
	// nothing, so a check never uses up the trial a session needs.
	StartsTrials bool
	// Peers, when set, make the one probe and the one trial of a server
	// hold across the hosts of a cluster (see Peers); nil is a single
	// host.
	Peers Peers
	// NoWitness, when set, says why the session whose failed calls this
	// Checker is told of is no witness of a server's health ("" when it
	// is): nightwatch is stopping it, or its owner died. A call cut short
	// by a stop nightwatch caused fails with the same words as a server
	// that went away (2.1.197 closes its servers on SIGTERM and reports
	// "Connection closed"), and such a failure must never open a server
	// that is fine, on this host or, through shared health, on every host.
	NoWitness func() string
	// MaxHold is how long a call to server may be held waiting for it to
	// come back (HoldFor); nil or 0 never holds: only the hook, which
	// decides for a real call, holds one.
	MaxHold func(server string) time.Duration
}

// Options are the Checker's collaborators for New; every zero field gets
// its default there.
type Options struct {
	// Now is the clock (time.Now).
	Now func() time.Time
	// Probe asks one server (nil: servers are never probed, only watched).
	Probe func(ctx context.Context, srv *mcpconfig.Server) probe.Result
	// Policy maps a failure class to an action (DefaultPolicy).
	Policy Policy
	// Reconnect runs a server's reconnect command and HaveReconnect says
	// whether it has one (a reconnect.Runner's Run and Have); nil: never.
	Reconnect     func(ctx context.Context, server string) ReconnectResult
	HaveReconnect func(server string) bool
	// ProbeWait bounds the wait for another process's probe (15 s).
	ProbeWait time.Duration
	// EventsPath is the events file ("" writes none).
	EventsPath string
	// Warn receives what must not stay silent (discarded when nil).
	Warn func(string)
	// Redact removes secrets from reasons (identity when nil).
	Redact func(string) string
	// StartsTrials: see Checker.StartsTrials (the hook sets it).
	StartsTrials bool
	// Peers are the cluster's other hosts (nil: a single host).
	Peers Peers
	// NoWitness: see Checker.NoWitness (the hook sets it).
	NoWitness func() string
	// MaxHold: see Checker.MaxHold (the hook sets it).
	MaxHold func(server string) time.Duration
}

// DefaultProbeWait is how long a hook waits for another hook's probe of
// the same server before probing itself.
const DefaultProbeWait = 15 * time.Second

// New is the one way to build a Checker: it resolves every default, so the
// hook, the operator commands, preflight and the night decide alike.
func New(store *Store, settings Settings, opts Options) *Checker {
	c := &Checker{
		Store:         store,
		Settings:      settings.withDefaults(),
		Now:           opts.Now,
		Probe:         opts.Probe,
		Policy:        opts.Policy,
		HaveReconnect: opts.HaveReconnect,
		Reconnect:     opts.Reconnect,
		ProbeWait:     opts.ProbeWait,
		Warn:          opts.Warn,
		Redact:        opts.Redact,
		StartsTrials:  opts.StartsTrials,
		Peers:         opts.Peers,
		NoWitness:     opts.NoWitness,
		MaxHold:       opts.MaxHold,
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Policy == nil {
		c.Policy = DefaultPolicy
	}
	if c.ProbeWait <= 0 {
		c.ProbeWait = DefaultProbeWait
	}
	if c.Warn == nil {
		c.Warn = func(string) {}
	}
	if c.Redact == nil {
		c.Redact = func(s string) string { return s }
	}
	if store != nil && store.Warn == nil {
		store.Warn = c.Warn
	}
	c.Events = &EventLog{Path: opts.EventsPath, Warn: c.Warn}
	return c
}

// Decision is the answer for one call.
type Decision struct {
	Allow  bool
	Server string
	// Entry is the server's record after the decision (nil when unknown).
	Entry *Entry
	// Probed is true when this decision ran a probe.
	Probed bool
	// Trial is true when this call is the one trial call let through a
	// half-open server whose outage only calls can see.
	Trial bool
	// Unchecked is true when the call is allowed because nightwatch could
	// not check it (no definition of the server, a transport it cannot
	// probe): its result is still watched (passive health).
	Unchecked bool
	// Hold, for a call that is not allowed, is how long it may wait for
	// the server to come back instead of being denied at once (HoldFor):
	// the server is being repaired or is likely back soon.
	Hold time.Duration
	// AwaitsTrial: the hold waits for the result of another call's trial
	// (TrialUnderway, here or on another host), not for a probe; a hold
	// that runs out counts no failure of the server.
	AwaitsTrial bool
	Note        string
}

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Checker) warn(msg string) {
	if c.Warn != nil {
		c.Warn(msg)
	}
}

func (c *Checker) redact(s string) string {
	if c.Redact == nil || s == "" {
		return s
	}
	return c.Redact(s)
}

func (c *Checker) read() *File {
	f, err := c.Store.Read()
	if err != nil {
		c.warn("nightwatch: " + err.Error())
	}
	f.Clamp(c.Settings, c.now())
	return f
}

// update is Store.Update with every entry clamped to the settings first,
// so that no decision, and nothing written back, trusts a timestamp the
// settings could not have produced.
func (c *Checker) update(change func(f *File) error) error {
	return c.Store.Update(func(f *File) error {
		f.Clamp(c.Settings, c.now())
		return change(f)
	})
}

// Gate decides from the cache alone; it touches nothing but the cache file,
// and decodes only server's entry when the file is in Layout.
func (c *Checker) Gate(server string) (Gate, *Entry) {
	sn := c.Snapshot()
	defer sn.Close()
	return c.gateIn(sn, server)
}

// Snapshot reads the cache once, saying what is wrong with it.
func (c *Checker) Snapshot() *Snapshot {
	sn := c.Store.Snapshot()
	if err := sn.Err(); err != nil {
		c.warn("nightwatch: " + err.Error())
	}
	return sn
}

// GateIn is Gate on a cache the caller read (Snapshot), for a hook that
// reads it once per call.
func (c *Checker) GateIn(sn *Snapshot, server string) (Gate, *Entry) { return c.gateIn(sn, server) }

// KnownHealthy says whether a call that worked tells nothing new of the
// server whose entry is e: healthy, nothing counted, more than half its
// TTL left. RecordSuccess writes nothing then, so a busy session does not
// fsync the cache after every call.
func (c *Checker) KnownHealthy(e *Entry) bool {
	return e != nil && e.Status == StatusHealthy && e.ConsecutiveFailures == 0 &&
		e.ExpiresAt.Time().Sub(c.now()) > c.Settings.withDefaults().TTL/2
}

// gateIn is Gate on a cache already read, with the entry clamped to the
// settings as every read is.
func (c *Checker) gateIn(sn *Snapshot, server string) (Gate, *Entry) {
	now := c.now()
	e := sn.Entry(server)
	if e != nil {
		n := c.Settings.Clamp(*e, now)
		e = &n
	}
	return GateOf(e, now), e
}

// Decide answers whether a call to server may go ahead: the gates first,
// then, once the backoff is over, either one trial call (an outage only
// calls can see) or one probe per server at a time with the reconnect
// policy, and a record of the outcome. lookup finds the server's
// definition; it is called only when a probe is needed. With Peers, the
// one probe and the one trial are one across the cluster's hosts too.
func (c *Checker) Decide(ctx context.Context, server string, lookup func() *mcpconfig.Server) Decision {
	return c.DecideIn(ctx, nil, server, lookup)
}

// DecideIn is Decide whose first look at the cache is sn, a Snapshot the
// caller already read for this call (nil: read it now), so that a hook
// reads the file once on the paths that need no probe.
func (c *Checker) DecideIn(ctx context.Context, sn *Snapshot, server string, lookup func() *mcpconfig.Server) Decision {
	if sn == nil {
		sn = c.Snapshot()
		defer sn.Close()
	}
	switch g, e := c.gateIn(sn, server); g {
	case GateAllow:
		return Decision{Allow: true, Server: server, Entry: e}
	case GateBlock:
		return Decision{Allow: false, Server: server, Entry: e, Hold: c.probeableHold(server, e, lookup),
			AwaitsTrial: TrialUnderway(e, c.now())}
	case GateTrial:
		return c.trial(ctx, server)
	}

	wait := c.ProbeWait
	if wait <= 0 {
		wait = DefaultProbeWait
	}
	lock, ok, err := c.Store.AcquireProbe(ctx, server, wait)
	switch {
	case err != nil:
		c.warn(fmt.Sprintf("nightwatch: %v; probing %s without it", err, server))
	case !ok:
		c.warn(fmt.Sprintf("nightwatch: another process has been probing %s for over %s; probing it again", server, wait))
	default:
		defer lock.Release()
	}
	// Another hook may have probed while this one waited for the lock.
	switch g, e := c.Gate(server); g {
	case GateAllow, GateBlock:
		d := Decision{Allow: g == GateAllow, Server: server, Entry: e}
		if !d.Allow {
			d.Hold = c.probeableHold(server, e, lookup)
		}
		return d
	case GateTrial:
		return c.trial(ctx, server)
	}

	var srv *mcpconfig.Server
	if lookup != nil {
		srv = lookup()
	}
	if srv == nil || c.Probe == nil {
		return Decision{Allow: true, Server: server, Unchecked: true,
			Note: fmt.Sprintf("no definition of MCP server %q was found, so it cannot be probed; it has passive health only (its calls are watched)", server)}
	}
	// The lock is this host's; another host may be probing the same
	// server: wait for its verdict (the relay brings it into the cache).
	// A server that cannot be probed asks no one (above).
	if c.Peers != nil {
		d, done, release := c.claimProbe(ctx, server, wait)
		if done {
			return d
		}
		if release != nil {
			defer release()
			// The relay brought in the verdict of whoever held the
			// claim before: it may decide already.
			switch g, e := c.Gate(server); g {
			case GateAllow, GateBlock:
				return Decision{Allow: g == GateAllow, Server: server, Entry: e}
			case GateTrial:
				return c.trial(ctx, server)
			}
		}
	}
	res := c.Probe(ctx, srv)
	if res.Verdict == probe.Unsupported {
		return Decision{Allow: true, Server: server, Unchecked: true, Probed: true,
			Note: fmt.Sprintf("MCP server %q: %s; it has passive health only (its calls are watched)", server, res.Reason)}
	}
	if slowStart(srv, res, c.Settings.withDefaults().ClientStartup) {
		return Decision{Allow: true, Server: server, Unchecked: true, Probed: true,
			Note: fmt.Sprintf("MCP server %q did not answer a probe within %s, but Claude Code waits up to %s for a server to start (MCP_TIMEOUT); "+
				"a probe this short cannot call it down, so the call goes ahead unchecked and its result is watched", server, res.TimedOutAfter, c.Settings.withDefaults().ClientStartup)}
	}
	return c.settle(ctx, srv, res, ByProbe)
}

// trial lets exactly one call through a half-open server, across every
// process: the check and the start of the trial are one locked update of
// the cache, so of many hooks that find the backoff over, one wins and
// the others find the server blocked again.
func (c *Checker) trial(ctx context.Context, server string) Decision {
	now := c.now()
	if !c.StartsTrials {
		_, e := c.Gate(server)
		return Decision{Allow: true, Server: server, Entry: e,
			Note: fmt.Sprintf("MCP server %q is half-open: its next real call is the trial", server)}
	}
	// Across hosts, the trial is claimed first (for the backoff window it
	// opens); the loser is blocked until the winner's trial decides.
	// The winner keeps the claim: it ends with the window, as the trial
	// does when its result never comes.
	release := func() {}
	if c.Peers != nil {
		g, e := c.Gate(server)
		if g != GateTrial {
			// Another host's trial reached this cache meanwhile: held
			// for its result like the loser of the claim.
			d := Decision{Allow: g == GateAllow || g == GateProbe, Server: server, Entry: e}
			if !d.Allow && TrialUnderway(e, now) {
				d.Hold, d.AwaitsTrial = c.HoldFor(server, e), true
			}
			return d
		}
		rel, ok, holder := c.claimTrial(ctx, server, e)
		if !ok {
			// Held (bounded by the server's max hold and the trial's
			// window) for the trial's result, which the relay brings.
			hold := c.trialHold(server, e)
			note := fmt.Sprintf("MCP server %q is half-open and host %s runs its one trial call; this call waits for its result", server, holder)
			if hold == 0 {
				note = fmt.Sprintf("MCP server %q is half-open and host %s runs its one trial call; this call is not held for its result", server, holder)
			}
			return Decision{Allow: false, Server: server, Entry: e, Hold: hold, AwaitsTrial: hold > 0, Note: note}
		}
		release = rel
	}
	var before, after *Entry
	won := false
	err := c.update(func(f *File) error {
		before = f.Entry(server)
		if GateOf(before, now) != GateTrial {
			after = before
			return nil
		}
		n := c.Settings.StartTrial(*before, now)
		f.Servers[server] = &n
		after, won = &n, true
		return nil
	})
	if err != nil {
		// Without the cache the one-trial promise cannot be kept; blocking
		// would keep the server down for as long as the cache is broken,
		// so the call goes ahead as a trial, said out loud.
		c.warn(fmt.Sprintf("nightwatch: cannot record the trial call of %s: %v; letting this call through as a trial that other sessions may repeat", server, err))
		return Decision{Allow: true, Server: server, Entry: before, Trial: true}
	}
	if !won {
		release() // another process of this host runs the trial
		g := GateOf(after, now)
		d := Decision{Allow: g == GateAllow || g == GateProbe, Server: server, Entry: after}
		if !d.Allow && TrialUnderway(after, now) {
			d.Hold, d.AwaitsTrial = c.HoldFor(server, after), true
		}
		return d
	}
	c.announce(server, before, after, Event{Kind: EventTrial, By: ByTrial, Code: string(after.LastFailureCode)}, now)
	return Decision{Allow: true, Server: server, Entry: after, Trial: true,
		Note: fmt.Sprintf("MCP server %q: its backoff is over; letting one trial call through (its result decides)", server)}
}

// settle turns a probe result into a recorded state and a decision,
// running the reconnect policy on a failure.
func (c *Checker) settle(ctx context.Context, srv *mcpconfig.Server, res probe.Result, by By) Decision {
	server := srv.Name
	if Reachable(srv, res) {
		e := c.record(server, func(p *Entry, now time.Time) Entry {
			n := c.Settings.ProbeHealthy(p, now, restoreWay(by))
			stamp(&n, srv, res)
			return n
		}, Event{By: by, Verdict: string(res.Verdict)})
		return Decision{Allow: e.Status == StatusHealthy, Server: server, Entry: e, Probed: true}
	}

	code := CodeOfVerdict(res.Verdict)
	reason := res.Reason
	var since *Entry
	if c.policy(code, server) == ActionReconnect {
		// The verdict is recorded once the reconnect is over; an outage
		// the reconnect ends at once is still an outage, so it is
		// announced before the command runs.
		since = c.announceDown(server, Event{By: by, Verdict: string(res.Verdict), Code: string(code),
			Reason: reason + "; reconnecting"})
		rc := c.Reconnect(ctx, server)
		if rc.Attempted && rc.OK {
			again := c.Probe(ctx, srv)
			if Reachable(srv, again) {
				e := c.recordSince(server, since, func(p *Entry, now time.Time) Entry {
					n := c.Settings.MarkHealthy(p, now, RestoredByReconnect)
					stamp(&n, srv, again)
					return n
				}, Event{By: ByReconnect, Verdict: string(again.Verdict), Reason: rc.Detail})
				return Decision{Allow: true, Server: server, Entry: e, Probed: true}
			}
			res, code = again, CodeOfVerdict(again.Verdict)
			reason = again.Reason + " (after reconnect: " + rc.Detail + ")"
		} else if rc.Attempted {
			reason += " (reconnect failed: " + rc.Detail + ")"
		}
	}
	f := Failure{Code: code, Reason: reason, RetryAfter: res.RetryAfter, RefusedBy: refusedBy(res)}
	e := c.recordSince(server, since, func(p *Entry, now time.Time) Entry {
		n := c.Settings.MarkUnhealthy(p, now, f)
		stamp(&n, srv, res)
		return n
	}, Event{By: by, Verdict: string(res.Verdict), Code: string(code), Reason: reason})
	return Decision{Allow: false, Server: server, Entry: e, Probed: true, Hold: c.HoldFor(server, e)}
}

// announceDown announces that server is down before its verdict is
// recorded (a reconnect runs first). It returns the state it announced,
// for the record that follows; nil when the server was already down.
func (c *Checker) announceDown(server string, ev Event) *Entry {
	before := c.read().Entry(server)
	if before != nil && before.Status == StatusUnhealthy {
		return nil
	}
	down := &Entry{Status: StatusUnhealthy, LastFailureCode: FailureCode(ev.Code)}
	c.announce(server, before, down, ev, c.now())
	return down
}

// SendsCredentials says whether the probe sends the same credentials as
// the client: an Authorization header configured for an HTTP server. Then
// a 401/403 to the probe is the client's 401 too (expired or revoked
// token), not an endpoint guarding itself from a credential-less probe.
func SendsCredentials(srv *mcpconfig.Server) bool {
	if srv == nil {
		return false
	}
	for name, v := range srv.Headers {
		if strings.EqualFold(name, "Authorization") && strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// Reachable is the one reachability rule of nightwatch, for the hook,
// preflight, maintenance and the stream observer alike: the probe's
// verdict proves the server can be called, except that auth-required is a
// failure when the probe sent the client's own credentials.
func Reachable(srv *mcpconfig.Server, res probe.Result) bool {
	if res.Verdict == probe.AuthRequired && SendsCredentials(srv) {
		return false
	}
	return res.Verdict.Reachable()
}

// ConfirmsOutage says whether a probe's result proves srv down: it is not
// reachable by Reachable's rule, and the probe could tell (a transport it
// can probe, and not a stdio start cut shorter than Claude Code's own
// start-up wait, which cannot tell a slow server from a dead one).
func (c *Checker) ConfirmsOutage(srv *mcpconfig.Server, res probe.Result) bool {
	return res.Verdict != probe.Unsupported && !Reachable(srv, res) &&
		!slowStart(srv, res, c.Settings.withDefaults().ClientStartup)
}

func (c *Checker) policy(code FailureCode, server string) Action {
	if c.Reconnect == nil {
		return ActionWait
	}
	have := c.HaveReconnect != nil && c.HaveReconnect(server)
	policy := c.Policy
	if policy == nil {
		policy = DefaultPolicy
	}
	return policy(code, have)
}

// restoreWay is how a healthy verdict by by closes an outage: any probe
// (the hook's, preflight's, maintenance's) is a probe.
func restoreWay(by By) string {
	switch by {
	case ByPreflight, ByMaintenance:
		return RestoredByProbe
	}
	return string(by)
}

func stamp(e *Entry, srv *mcpconfig.Server, res probe.Result) {
	if srv.Source != "" {
		e.Source = srv.Source
	}
	e.Transport = string(srv.Transport)
	e.Verdict = string(res.Verdict)
	e.LatencyMs = res.Latency.Milliseconds()
	if res.Era != "" {
		e.Era, e.ProtocolVersion = string(res.Era), res.ProtocolVersion
		e.SupportedVersions = res.SupportedVersions
	}
	e.SlowDiscover, e.LegacySSE = res.SlowDiscover, res.LegacySSE
}

func stampDefinition(e *Entry, srv *mcpconfig.Server) {
	if srv != nil {
		e.Source = srv.Source
		e.Transport = string(srv.Transport)
	}
}

// record applies change to the freshest entry under the cache lock and
// reports a change of state to the events file. A cache that cannot be
// written is reported every time; the decision stands regardless.
func (c *Checker) record(server string, change func(prev *Entry, now time.Time) Entry, ev Event) *Entry {
	return c.recordSince(server, nil, change, ev)
}

// recordSince is record after an announcement the cache does not hold
// (announceDown): the change is announced from since when it is not nil.
func (c *Checker) recordSince(server string, since *Entry, change func(prev *Entry, now time.Time) Entry, ev Event) *Entry {
	now := c.now()
	var before *Entry
	var after Entry
	err := c.update(func(f *File) error {
		before = f.Entry(server)
		after = change(before, now)
		after.LastError = c.redact(after.LastError)
		f.Servers[server] = &after
		return nil
	})
	if err != nil {
		if before == nil {
			after = change(nil, now)
		}
		c.warn(fmt.Sprintf("nightwatch: cannot save the health of %s: %v (decision made without saving it)", server, err))
	}
	if since != nil {
		before = since
	}
	c.announce(server, before, &after, ev, now)
	return &after
}

// announce writes a change of state (or an event that is always written,
// such as a trial) to the events file.
func (c *Checker) announce(server string, before, after *Entry, ev Event, now time.Time) {
	from := Status("")
	if before != nil {
		from = before.Status
	}
	if ev.Kind == "" {
		if from == after.Status {
			return
		}
		ev.Kind = EventState
	}
	ev.Time, ev.Server, ev.From, ev.To = now, server, from, after.Status
	if ev.Code == "" {
		ev.Code = string(after.LastFailureCode)
	}
	if after.Status == StatusUnhealthy {
		ev.Until = after.NextRetryAt.Time()
		if ev.Reason == "" {
			ev.Reason = after.LastError
		}
	}
	ev.Reason = c.redact(ev.Reason)
	c.Events.Append(ev)
}

// RecordSuccess is PostToolUse: a real call that worked is the best
// witness. It closes the server (ending a trial), and resets the count of
// upstream failures. A healthy entry with more than half its TTL left and
// nothing counted is not rewritten, so a busy session does not fsync the
// cache after every call.
func (c *Checker) RecordSuccess(server string, srv *mcpconfig.Server) {
	c.RecordCallSuccessIn(nil, server, func() *mcpconfig.Server { return srv }, CallSuccess{})
}

// CallSuccess is a call that succeeded in the client. TaskOnly, asked
// only when the success would change the server's entry, says whether the
// server merely accepted the call as an MCP task (exec-server recorded the
// task under the call's tool_use_id before the answer left; 2.1.197 shows
// such an answer to PostToolUse as an empty success): an accepted task is
// no proof that the server is healthy.
type CallSuccess struct {
	TaskOnly func() bool
}

// RecordCallSuccessIn is RecordSuccess whose first look at the cache is
// sn (nil: read it now), with the wire's evidence: a success that only
// accepted a task records nothing (it ends no outage, closes no trial and
// starts no failure count over), and says so (false). lookup finds the
// server's definition; it and call.TaskOnly are called only when the
// entry would be written, never for a server known healthy.
func (c *Checker) RecordCallSuccessIn(sn *Snapshot, server string, lookup func() *mcpconfig.Server, call CallSuccess) (recorded bool) {
	if sn == nil {
		sn = c.Snapshot()
		defer sn.Close()
	}
	if _, e := c.gateIn(sn, server); c.KnownHealthy(e) {
		return false
	}
	if call.TaskOnly != nil && call.TaskOnly() {
		return false
	}
	srv := lookup()
	c.record(server, func(p *Entry, now time.Time) Entry {
		n := c.Settings.MarkHealthy(p, now, RestoredByPassive)
		stampDefinition(&n, srv)
		return n
	}, Event{By: ByPassive})
	return true
}

// RecordFailure is PostToolUseFailure: classify the client's error text,
// then open the server at once (the client's own transport or auth
// failure, or one a probe confirms), count it (a server or upstream
// condition the handshake cannot see: opens at the threshold), or leave
// the server alone (a tool's own error; a text that tells nothing). srv
// is nil when nightwatch has no definition: the failure is still recorded
// and counted, with only calls to witness it. A session that is no
// witness (NoWitness) records nothing and says why, in cl.NotWitness and
// out loud. It returns the classification and the entry after it (nil
// when nothing was recorded).
func (c *Checker) RecordFailure(ctx context.Context, server string, srv *mcpconfig.Server, errText string) (Classification, *Entry) {
	return c.RecordCallFailure(ctx, server, srv, CallFailure{Text: errText})
}

// CallFailure is a call that failed in the client: its error text, and
// Answered, asked only when the text reads as the client's own, says
// whether the server itself answered the call with that failure (the
// hook reads exec-server's EventCallAnswered: ServerAnswered).
type CallFailure struct {
	Text     string
	Answered func() bool
}

// RecordCallFailure is RecordFailure with the wire's evidence: a failure
// whose text is the client's own ("Connection closed") but which the
// server itself answered is the server's answer (ClassifyAnswered), and
// never opens it.
func (c *Checker) RecordCallFailure(ctx context.Context, server string, srv *mcpconfig.Server, call CallFailure) (Classification, *Entry) {
	errText := call.Text
	transport := mcpconfig.Transport("")
	if srv != nil {
		transport = srv.Transport
	}
	cl := Classify(errText, transport)
	if cl.Client != "" && call.Answered != nil && call.Answered() {
		cl = ClassifyAnswered(errText)
	}
	reason := text.OneLine(errText, 300)
	if (cl.Counts || cl.MarksUnhealthy) && c.NoWitness != nil {
		if why := c.NoWitness(); why != "" {
			cl.Counts, cl.MarksUnhealthy, cl.NeedsProbe, cl.NotWitness = false, false, false, why
			c.warn(fmt.Sprintf("nightwatch: the failed call to %s (%s: %s) is not recorded against it: %s",
				server, cl.Code, c.redact(reason), why))
			return cl, nil
		}
	}
	if cl.Counts {
		return cl, c.count(server, srv, Failure{Code: cl.Code, Reason: reason})
	}
	if !cl.MarksUnhealthy {
		return cl, nil
	}
	canProbe := srv != nil && c.Probe != nil
	if cl.NeedsProbe && canProbe {
		// The client dropped the HTTP status; ask the server for it.
		res := c.Probe(ctx, srv)
		if Reachable(srv, res) {
			// The handshake works, so the fault is one only calls see:
			// count it like an upstream failure.
			cl.Counts, cl.MarksUnhealthy = true, false
			return cl, c.count(server, srv, Failure{Code: cl.Code, Reason: reason + "; a probe finds the handshake working"})
		}
		res.Reason = reason + "; probe: " + res.Reason
		d := c.settle(ctx, srv, res, ByCallFailure)
		cl.Code = CodeOfVerdict(res.Verdict)
		return cl, d.Entry
	}
	f := Failure{Code: cl.Code, Reason: reason}
	if cl.Client == ClientUnreachable && srv != nil && srv.Transport != mcpconfig.Stdio {
		// The client's own "Unable to connect" (2.1.332: "ECONNREFUSED: "):
		// nothing listened at the server's address.
		f.RefusedBy = ByCallFailure
	}
	if !canProbe || (cl.Code == CodeAuth && !SendsCredentials(srv)) {
		// A probe cannot see this outage (no definition, or credentials
		// the probe does not have): only a trial call may end it.
		f.Witness = WitnessCalls
	}
	e := c.record(server, func(p *Entry, now time.Time) Entry {
		n := c.Settings.MarkUnhealthy(p, now, f)
		stampDefinition(&n, srv)
		return n
	}, Event{By: ByCallFailure, Code: string(cl.Code), Reason: reason})

	if canProbe && c.policy(cl.Code, server) == ActionReconnect {
		rc := c.Reconnect(ctx, server)
		if rc.Attempted && rc.OK {
			// Only a healthy re-probe clears the entry.
			res := c.Probe(ctx, srv)
			if res.Verdict == probe.Healthy || (res.Verdict == probe.AuthRequired && cl.Code != CodeAuth) {
				e = c.record(server, func(p *Entry, now time.Time) Entry {
					n := c.Settings.MarkHealthy(p, now, RestoredByReconnect)
					stamp(&n, srv, res)
					return n
				}, Event{By: ByReconnect, Verdict: string(res.Verdict), Reason: rc.Detail})
			}
		} else if rc.Attempted {
			c.warn(fmt.Sprintf("nightwatch: reconnect of %s failed: %s", server, rc.Detail))
		}
	}
	return cl, e
}

// count applies one upstream failure under the cache lock, so that 64
// concurrent hooks lose no count, and announces an opening (a closed
// server tripping, or a trial call failing: half-open → open). A restart
// cannot fix an upstream, so no reconnect runs; the trial call decides.
func (c *Checker) count(server string, srv *mcpconfig.Server, f Failure) *Entry {
	now := c.now()
	var before *Entry
	var after Entry
	opened := false
	err := c.update(func(file *File) error {
		before = file.Entry(server)
		after, opened = c.Settings.CountFailure(before, now, f)
		stampDefinition(&after, srv)
		after.LastError = c.redact(after.LastError)
		file.Servers[server] = &after
		return nil
	})
	if err != nil {
		c.warn(fmt.Sprintf("nightwatch: cannot save the failure count of %s: %v", server, err))
		return &after
	}
	if opened {
		c.announce(server, before, &after, Event{Kind: EventState, By: ByCallFailures,
			Code: string(f.Code), Reason: f.Reason}, now)
	}
	return &after
}

// RecordClientStatus is what a session's stream-json init event says of a
// server: "failed" (Claude Code could not connect) or "needs-auth" opens
// it, announced like every transition; any other status records nothing.
// srv is the server's definition (nil: only calls can witness it). For
// the night's stream observer, instead of writing the cache itself.
func (c *Checker) RecordClientStatus(server string, srv *mcpconfig.Server, status, reason string) *Entry {
	f := Failure{Reason: reason}
	switch status {
	case "failed":
		f.Code = CodeTransport
	case "needs-auth":
		f.Code = CodeAuth
	default:
		return nil
	}
	if srv == nil || (f.Code == CodeAuth && !SendsCredentials(srv)) {
		// The probe has no OAuth token of the session's: only a call sees
		// whether the login is back.
		f.Witness = WitnessCalls
	}
	return c.record(server, func(p *Entry, now time.Time) Entry {
		n := c.Settings.MarkUnhealthy(p, now, f)
		stampDefinition(&n, srv)
		return n
	}, Event{By: BySessionInit, Code: string(f.Code), Reason: reason})
}

// RecordProbe stores a probe's verdict as it is, without the reconnect
// policy: `nightwatch probe` and the night's maintenance report what they
// see, by the same reachability rule (Reachable) as every other verdict.
//
// A stdio probe that only ran out of a budget shorter than Claude Code's
// start-up wait is not recorded (see slowStart): it cannot tell a slow
// server from a dead one.
func (c *Checker) RecordProbe(srv *mcpconfig.Server, res probe.Result, by By) *Entry {
	if res.Verdict == probe.Unsupported || slowStart(srv, res, c.Settings.withDefaults().ClientStartup) {
		return nil
	}
	change, ev := probeTransition(c.Settings, srv, res, by)
	return c.record(srv.Name, change, ev)
}

// ProbeRecord is one verdict for RecordPreflight.
type ProbeRecord struct {
	Server *mcpconfig.Server
	Result probe.Result
}

// RecordPreflight stores the preflight's verdicts, by the rule and
// transitions of RecordProbe, in one locked update: a preflight of twenty
// servers costs one cache write and one fsync, not twenty in turn. Every
// verdict is announced, an unchanged one too: they are the state the night
// starts from, and a server already down before the first job is an outage
// of the night like any other.
func (c *Checker) RecordPreflight(items []ProbeRecord) {
	now := c.now()
	type change struct {
		name          string
		before, after *Entry
		ev            Event
	}
	var changes []change
	err := c.update(func(f *File) error {
		changes = changes[:0]
		for _, it := range items {
			if it.Result.Verdict == probe.Unsupported || slowStart(it.Server, it.Result, c.Settings.withDefaults().ClientStartup) {
				continue
			}
			apply, ev := probeTransition(c.Settings, it.Server, it.Result, ByPreflight)
			ev.Kind = EventState
			before := f.Entry(it.Server.Name)
			after := apply(before, now)
			after.LastError = c.redact(after.LastError)
			f.Servers[it.Server.Name] = &after
			changes = append(changes, change{it.Server.Name, before, &after, ev})
		}
		return nil
	})
	if err != nil {
		c.warn(fmt.Sprintf("nightwatch: cannot save the probe verdicts: %v", err))
		return
	}
	for _, ch := range changes {
		c.announce(ch.name, ch.before, ch.after, ch.ev, now)
	}
}

func probeTransition(s Settings, srv *mcpconfig.Server, res probe.Result, by By) (func(*Entry, time.Time) Entry, Event) {
	if Reachable(srv, res) {
		return func(p *Entry, now time.Time) Entry {
			n := s.ProbeHealthy(p, now, restoreWay(by))
			stamp(&n, srv, res)
			return n
		}, Event{By: by, Verdict: string(res.Verdict)}
	}
	f := Failure{Code: CodeOfVerdict(res.Verdict), Reason: res.Reason, RetryAfter: res.RetryAfter, RefusedBy: refusedBy(res)}
	return func(p *Entry, now time.Time) Entry {
		n := s.MarkUnhealthy(p, now, f)
		stamp(&n, srv, res)
		return n
	}, Event{By: by, Verdict: string(res.Verdict), Code: string(f.Code), Reason: res.Reason}
}

// Reset removes entries: the named ones, every one (all), or the stuck
// ones (backoff pinned at its cap). It returns the names removed. This
// replaces the article's python one-liner, under the same lock as hooks.
func (c *Checker) Reset(names []string, all, stuck bool) ([]string, error) {
	var removed []string
	err := c.update(func(f *File) error {
		for name, e := range f.Servers {
			drop := all || (stuck && c.Settings.Stuck(e))
			for _, n := range names {
				drop = drop || n == name
			}
			if drop {
				delete(f.Servers, name)
				removed = append(removed, name)
			}
		}
		return nil
	})
	sort.Strings(removed)
	for _, name := range removed {
		c.Events.Append(Event{Time: c.now(), Kind: EventState, Server: name, To: "", By: ByReset})
	}
	return removed, err
}

// slowStart says whether a probe's failure is only that a stdio server had
// not answered within a budget shorter than Claude Code's own start-up wait:
// a slow server, not a dead one, as far as this probe can tell.
func slowStart(srv *mcpconfig.Server, res probe.Result, clientStartup time.Duration) bool {
	return srv.Transport == mcpconfig.Stdio && res.TimedOutAfter > 0 && res.TimedOutAfter < clientStartup
}

// refusedBy is ByProbe when the probe's connection was refused (the
// dialer's errno, probe.Result.Refused), else "".
func refusedBy(res probe.Result) By {
	if res.Refused {
		return ByProbe
	}
	return ""
}
