package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/hook/hot"
	"github.com/nightwatch-dev/nightwatch/internal/sessionstop"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// holdResult is how a hold ended.
type holdResult struct {
	d       healthcheck.Decision
	outcome string
	waited  time.Duration
}

// hold keeps a call to a server that is down but being repaired waiting
// (reference claude-code-in-flight §1): it re-probes every
// min(backoff, HoldInterval), one probe per server at a time across hooks
// (Checker.Recheck), until the server answers or d.Hold has passed. The
// wait is measured on the monotonic clock. A `holding` and a `held` line
// go to the events file, so the night's stall timer counts the hold as
// the session's output and the journal gets one line per hold.
func (h *handler) hold(ctx context.Context, server, tool string, d healthcheck.Decision) holdResult {
	start := time.Now()
	deadline := start.Add(d.Hold)
	interval := min(h.checker.Settings.Backoff, healthcheck.HoldInterval)
	if interval <= 0 {
		interval = healthcheck.HoldInterval
	}
	dir, _ := h.env.Getenv(sessionstop.DirEnv)
	code := ""
	if d.Entry != nil {
		code = string(d.Entry.LastFailureCode)
	}
	h.checker.Events.Append(healthcheck.Event{Time: h.now(), Kind: healthcheck.EventHolding, Session: h.p.SessionID,
		Server: server, Tool: h.p.ToolName, Code: code, Until: h.now().Add(d.Hold), Dir: dir})
	h.say(fmt.Sprintf("nightwatch: MCP server %q is down (%s) but may be back soon; holding this call up to %s for it",
		server, hot.Condition(healthcheck.FailureCode(code)), d.Hold))
	h.log.Info().Str("server", server).Str("tool", tool).Dur("max", d.Hold).Msg("holding")

	lookup := func() *mcpconfig.Server { return h.lookup(server) }
	res := holdResult{d: d, outcome: healthcheck.HoldGaveUp}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		wait := min(interval, time.Until(deadline))
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				res.outcome = healthcheck.HoldCancelled
				return h.endHold(server, tool, start, dir, res)
			case <-timer.C:
			}
		}
		seen := healthcheck.Millis(0)
		if res.d.Entry != nil {
			seen = res.d.Entry.CheckedAt
		}
		next := h.checker.Recheck(ctx, server, seen, lookup)
		if next.Entry == nil {
			next.Entry = res.d.Entry
		}
		res.d = next
		switch {
		case next.Allow:
			res.outcome = healthcheck.HoldAnswered
			return h.endHold(server, tool, start, dir, res)
		case next.Hold == 0:
			res.outcome = healthcheck.HoldDenied
			return h.endHold(server, tool, start, dir, res)
		case !time.Now().Before(deadline):
			if !res.d.AwaitsTrial {
				// A trial still underway (here or on another host) is
				// not this server's failure: its result decides.
				res.d.Entry = h.checker.GiveUpHold(server)
			}
			return h.endHold(server, tool, start, dir, res)
		}
	}
}

func (h *handler) endHold(server, tool string, start time.Time, dir string, res holdResult) holdResult {
	res.waited = time.Since(start)
	code := ""
	if res.d.Entry != nil {
		code = string(res.d.Entry.LastFailureCode)
	}
	h.checker.Events.Append(healthcheck.Event{Time: h.now(), Kind: healthcheck.EventHeld, Session: h.p.SessionID,
		Server: server, Tool: h.p.ToolName, Code: code, Outcome: res.outcome,
		HeldSeconds: res.waited.Round(100 * time.Millisecond).Seconds(), Dir: dir})
	h.log.Info().Str("server", server).Str("tool", tool).Str("outcome", res.outcome).Dur("waited", res.waited).Msg("held")
	return res
}

// addContext prints the one line of context the model reads after the
// call (hookSpecificOutput.additionalContext; reference
// claude-code-in-flight §4: never decision "block", which shows the model
// the hook's command line, and never systemMessage, which does not reach
// it). 2.1.197 puts it in a <system-reminder> after the result, 2.1.332 in
// a system message.
func (h *handler) addContext(event, text string) {
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName":     event,
		"additionalContext": text,
	}})
	fmt.Fprintln(h.env.Stdout, string(out))
}

// newProcess says how a new process of server replaced the one that was
// down at down ("" when nothing says so: a session outside a night's
// attempt, an HTTP server that kept its listener). Read only after a hold
// that ended with the server back (entry is its entry then). A stdio
// server's restarts are exec-server's events in the events file
// (healthcheck.NewProcess); an HTTP server's is its entry
// (healthcheck.HTTPRestart: its address refused connections during the
// outage), and the hook announces it in the events file, which the night
// journals as server-restarted.
func (h *handler) newProcess(server string, down time.Time, entry *healthcheck.Entry) string {
	if srv := h.lookup(server); srv != nil && srv.Transport != mcpconfig.Stdio {
		return h.httpRestart(server, srv.Transport, down, entry)
	}
	dir, _ := h.env.Getenv(sessionstop.DirEnv)
	run, job, attempt, inAttempt := statedir.AttemptOf(dir)
	if !inAttempt || h.checker.Events == nil || h.checker.Events.Path == "" {
		return ""
	}
	tail := healthcheck.EventTail{Path: h.checker.Events.Path}
	how, _ := healthcheck.NewProcess(tail.Next(), run, job, attempt, server, down)
	return how
}

// serverAnswered says whether exec-server saw server itself answer this
// call (the payload's tool_use_id) with a failure, from the events file
// (healthcheck.ServerAnswered). Read only for a failure whose text is the
// client's own: outside a night's attempt there is no exec-server, and
// nothing to read.
func (h *handler) serverAnswered(server string) bool {
	dir, _ := h.env.Getenv(sessionstop.DirEnv)
	run, job, attempt, ok := statedir.AttemptOf(dir)
	if !ok || h.p.ToolUseID == "" || h.checker.Events == nil || h.checker.Events.Path == "" {
		return false
	}
	tail := healthcheck.EventTail{Path: h.checker.Events.Path}
	verdict, answered := healthcheck.ServerAnswered(tail.Next(), run, job, attempt, server, h.p.ToolUseID)
	if answered {
		h.log.Info().Str("server", server).Str("answer", verdict).Msg("the server itself answered the failed call")
	}
	return answered
}

// httpRestart says how an HTTP server back after its outage (begun at
// down; entry is its entry now) is a new process (healthcheck.HTTPRestart,
// "" when nothing says so), and announces it in the events file with the
// outage's first refusal as Since, the same for every hook that sees it,
// so that the night journals it once.
func (h *handler) httpRestart(server string, transport mcpconfig.Transport, down time.Time, entry *healthcheck.Entry) string {
	how, ok := healthcheck.HTTPRestart(entry, transport, down)
	if !ok {
		return ""
	}
	dir, _ := h.env.Getenv(sessionstop.DirEnv)
	ev := healthcheck.Event{Time: h.now(), Kind: healthcheck.EventServerRestarted, Session: h.p.SessionID,
		Server: server, By: healthcheck.ByProbe, Reason: how, Since: entry.RefusedAt.Time(), Dir: dir}
	if run, job, attempt, inAttempt := statedir.AttemptOf(dir); inAttempt {
		ev.Run, ev.Job, ev.Attempt = run, job, attempt
	}
	h.checker.Events.Append(ev)
	h.log.Info().Str("server", server).Str("how", how).Msg("back as a new process")
	return how
}

// probedBack says how an HTTP server that this call's own probe found
// back (its backoff had run out, so the call was not held) is a new
// process ("" when it is not, or the probe did not restore it).
func (h *handler) probedBack(server string, d healthcheck.Decision) string {
	e := d.Entry
	if !d.Probed || e == nil || !healthcheck.RestoredAt(e, e.CheckedAt) {
		return ""
	}
	srv := h.lookup(server)
	if srv == nil || srv.Transport == mcpconfig.Stdio {
		return ""
	}
	return h.httpRestart(server, srv.Transport, e.RefusedAt.Time(), e)
}
