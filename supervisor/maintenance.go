package supervisor

import (
	"context"
	"sort"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/reconnect"
	"github.com/nightwatch-dev/nightwatch/session"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// maintain runs between jobs and while jobs wait: reconnect and re-probe
// unhealthy servers whose retry time has come, re-probe early the servers
// deferred jobs wait for, reset stuck entries whose server answers again,
// and drop entries of servers the batch does not define.
func (n *night) maintain(ctx context.Context) {
	f, err := n.store.Read()
	if err != nil {
		n.warn(err.Error())
	}
	now := n.now()
	// Which servers deferred jobs wait for looks at every job: asked only
	// when a server is down, not after every job of a healthy night.
	var waitedFor map[string]bool
	for _, srv := range n.b.Servers {
		e := f.Entry(srv.Name)
		if e == nil || e.Status != healthcheck.StatusUnhealthy {
			continue
		}
		if waitedFor == nil {
			waitedFor = n.plan.ServersWaitedFor()
		}
		due := !now.Before(e.NextRetryAt.Time())
		stuck := n.checker.Settings.Stuck(e)
		switch {
		case due:
			n.syncJournal() // the probe may take seconds (loop.go: mayWait)
			d := n.decide(ctx, srv)
			n.maintenance(srv.Name, journal.Retry, "retry time came: probed with the reconnect policy", d.Entry)
		case (stuck || waitedFor[srv.Name]) && e.LastFailureCode != healthcheck.CodeRateLimited:
			// The backoff protects servers from hooks; the supervisor
			// probes once per interval so a job waiting on a server that
			// is back starts within one interval, not one backoff.
			// A probe that finds it still down by the health check's
			// rule (a 401 to the server's own token included) is not
			// recorded: that would grow the backoff the hooks wait out.
			n.syncJournal()
			res := n.probe(ctx, &srv.MCP)
			if !healthcheck.Reachable(&srv.MCP, res) {
				continue
			}
			after := n.checker.RecordProbe(&srv.MCP, res, healthcheck.ByMaintenance)
			what := "answered again while a job waited for it"
			if stuck {
				what = "stuck entry reset: its backoff was pinned at the cap, but it answers again"
			}
			if !recordedHealthy(after) {
				what = "answered a probe, but the health check still finds it unhealthy"
			}
			n.maintenance(srv.Name, journal.Reprobe, what, after)
		}
	}
	var stale []string
	for name := range f.Servers {
		if n.b.Server(name) == nil {
			stale = append(stale, name)
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		if _, err := n.checker.Reset(stale, false, false); err == nil {
			for _, name := range stale {
				n.append(journal.Event{Type: journal.Maintenance, Server: name, Action: journal.Drop,
					Status: journal.Healthy, Reason: "dropped cache entries of servers the batch does not define"})
			}
			n.log.Info().Strs("servers", stale).Msg("dropped cache entries of servers the batch does not define")
		}
	}
	n.absorbServerEvents()
}

// recordedHealthy is the Checker's verdict as it stored it.
func recordedHealthy(e *healthcheck.Entry) bool {
	return e != nil && e.Status == healthcheck.StatusHealthy
}

// maintenance journals what maintenance did to server and the state the
// Checker recorded for it afterwards (e, nil when nothing was recorded).
func (n *night) maintenance(server string, action journal.Action, what string, e *healthcheck.Entry) {
	status := journal.Unhealthy
	if recordedHealthy(e) {
		status = journal.Healthy
	}
	n.append(journal.Event{Type: journal.Maintenance, Server: server, Action: action, Status: status, Reason: what})
	n.log.Info().Str("server", server).Str("status", string(status)).Msg(what)
}

func (n *night) probe(ctx context.Context, srv *mcpconfig.Server) probe.Result {
	cwd := n.b.Dir
	res := probe.Probe(ctx, srv, probe.Options{Timeout: n.b.Health.ProbeTimeout, Cwd: cwd,
		Environ: n.sessionEnviron()})
	res.Reason = redact.String(res.Reason, srv.Secrets()...)
	if n.checker != nil && n.checker.ConfirmsOutage(srv, res) {
		n.probedDown = append(n.probedDown, plan.ServerDown{Server: srv.Name, Reason: text.OneLine(res.Reason, 160)})
	}
	return res
}

// sessionEnviron is the environment sessions (and so their stdio servers)
// get, so that probes start servers the way sessions will.
func (n *night) sessionEnviron() []string { return session.Environ(n.b, n.opts.Env) }

func (n *night) newChecker() *healthcheck.Checker {
	runner := n.reconnectRunner()
	return healthcheck.New(n.store, n.b.Health.Settings(), healthcheck.Options{
		Now:           n.now,
		Probe:         n.probe,
		HaveReconnect: runner.Have,
		Reconnect: func(ctx context.Context, server string) healthcheck.ReconnectResult {
			// The Checker announced the outage before it reconnects: it
			// goes into the journal before the reconnect's own line.
			n.absorbServerEvents()
			return runner.Run(ctx, server)
		},
		ProbeWait:  n.b.Health.ProbeTimeout + 10*time.Second,
		EventsPath: statedir.Events(n.b.StateDir),
		Warn:       n.warn,
		Redact: func(s string) string {
			var secrets []string
			for _, srv := range n.b.Servers {
				secrets = append(secrets, srv.MCP.Secrets()...)
			}
			return redact.String(s, secrets...)
		},
		// The night's own checks never use up the one trial call a
		// session's hook needs to clear an outage only calls can see.
		StartsTrials: false,
	})
}

// reconnectRunner is the one reconnect.Runner of the night: the batch's
// servers.<name>.reconnect first, else the environment's
// NIGHTWATCH_RECONNECT_<SERVER> as the sessions' hooks read it, with the
// hooks' timeout, and every attempt journaled.
func (n *night) reconnectRunner() *reconnect.Runner {
	env := n.sessionEnviron()
	return &reconnect.Runner{
		Getenv: environ.Lookup(env),
		Configured: func(server string) (string, string) {
			if srv := n.b.Server(server); srv != nil && srv.Reconnect != "" {
				return srv.Reconnect, "servers." + server + ".reconnect"
			}
			return "", ""
		},
		Timeout: n.b.Health.ReconnectTimeout,
		Dir:     n.b.Dir,
		Env:     env,
		Secrets: func(server string) []string {
			if srv := n.b.Server(server); srv != nil {
				return srv.MCP.Secrets()
			}
			return nil
		},
		Warn: n.warn,
		Observe: func(server string, res healthcheck.ReconnectResult) {
			n.append(journal.Event{Type: journal.Maintenance, Server: server, Action: journal.Reconnect, Reason: res.Detail})
			n.log.Info().Str("server", server).Bool("ok", res.OK).Str("command", res.Detail).Msg("reconnect")
		},
	}
}

// decide is the Checker's Decide for srv; the state changes it announced
// (a probe's verdict, an outage and its reconnect) go into the journal at
// once, before whatever the night does about them.
func (n *night) decide(ctx context.Context, srv *jobs.Server) healthcheck.Decision {
	d := n.checker.Decide(ctx, srv.Name, func() *mcpconfig.Server { return &srv.MCP })
	n.absorbServerEvents()
	return d
}
