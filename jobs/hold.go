package jobs

import (
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/nightwatch-dev/nightwatch/internal/knobs"
)

// maxHold reads a hold bound: a duration of at most 5m, or 0 (never hold).
func (l *loader) maxHold(n *yaml.Node, field string) (time.Duration, bool) {
	s, line, ok := l.str(n, field)
	if !ok {
		return 0, false
	}
	s = strings.TrimSpace(s)
	if s == "0" || s == "0s" {
		return 0, true
	}
	if _, err := time.ParseDuration(s); err != nil {
		l.problem(line, field, "%q is not a duration: write 2m or 90s (0 never holds)", s)
		return 0, false
	}
	d, err := knobs.ParseMaxHold(s)
	if err != nil {
		l.problem(line, field, "%s %v", s, err)
		return 0, false
	}
	return d, true
}

// HoldOf is how long a call of job j to srv may be held (srv nil: to a
// server without its own max_hold): the server's max_hold, else the
// batch's. The default, unless written, gives way to a stall_timeout it
// would not fit in (half of it), so a batch with a short stall_timeout
// keeps working; a written one that does not fit is refused (checkStall).
func (b *Batch) HoldOf(j *Job, srv *Server) time.Duration {
	if srv != nil && srv.MaxHold != nil {
		return *srv.MaxHold
	}
	h := b.Health.MaxHold
	if !b.Health.MaxHoldSet && j != nil && j.StallTimeout > 0 && h >= j.StallTimeout {
		h = j.StallTimeout / 2
	}
	return h
}

// LongestHold is the longest a call of j may be held, over its servers.
func (b *Batch) LongestHold(j *Job) time.Duration {
	longest := b.HoldOf(j, nil)
	for _, srv := range b.ServersOf(j) {
		longest = max(longest, b.HoldOf(j, srv))
	}
	return longest
}

// LongestHoldOfAll is the longest a call of any job (or of a session
// outside the batch's jobs) may be held, over every server.
func (b *Batch) LongestHoldOfAll() time.Duration {
	hold := b.HoldOf(nil, nil)
	for _, j := range b.Jobs {
		hold = max(hold, b.LongestHold(j))
	}
	for _, srv := range b.Servers {
		hold = max(hold, b.HoldOf(nil, srv))
	}
	return hold
}

// checkStall refuses a stall_timeout a hold could outlast: Claude Code
// 2.1.197 prints nothing while a hook holds a call, and the hook's holding
// line counts as output only when it is written.
func (l *loader) checkStall(b *Batch, j *Job, f map[string]pair, field string) {
	hold := b.LongestHold(j)
	if j.StallTimeout <= 0 || hold <= 0 || j.StallTimeout > hold {
		return
	}
	name, line := "defaults.stall_timeout", j.Line
	if p, ok := f["stall_timeout"]; ok {
		name, line = field+".stall_timeout", p.line()
	}
	l.problem(line, name, "%s must exceed the longest hold of job %s's calls (%s: health.max_hold or a server's max_hold), "+
		"or a held call would read as a stalled session", j.StallTimeout, j.Name, hold)
}

// The bounds of the hook's timeout in Claude Code's settings.
const (
	// MinHookTimeout is the least timeout of nightwatch's hook, in
	// seconds; a job whose calls may be held gets more (HookTimeout).
	MinHookTimeout = 60
	// hookTimeoutMargin is what the hook's timeout adds to the longest
	// hold, probe and reconnect, for a hook started on a busy machine.
	hookTimeoutMargin = 30 * time.Second
	// MaxHookTimeout is the longest hook timeout Claude Code 2.1.197
	// keeps, in seconds: over 2^31 ms its timer overflows and cancels the
	// hook at once (reference claude-code-in-flight §1.2).
	MaxHookTimeout = 2147483
)

// HookTimeout is the timeout, in seconds, nightwatch's hook needs in
// Claude Code's settings for the calls of job j (nil: of every job): long
// enough for the longest hold, the probes that end it, the reconnects and
// the wait for another hook's probe, so that the hook's own bound always
// ends a hold first (a CLI timeout sends the call to the dead server).
// The night writes it into its sessions' settings; doctor holds a hook
// installed by hand to it.
func (b *Batch) HookTimeout(j *Job) int {
	probe := b.Health.ProbeTimeout
	if probe <= 0 {
		probe = DefaultHealth().ProbeTimeout
	}
	rc := b.Health.ReconnectTimeout
	if rc <= 0 {
		rc = DefaultHealth().ReconnectTimeout
	}
	hold := b.LongestHoldOfAll()
	if j != nil {
		hold = b.LongestHold(j)
	}
	d := hold + 3*probe + 2*rc + hookTimeoutMargin
	secs := max(int((d+time.Second-1)/time.Second), MinHookTimeout)
	return min(secs, MaxHookTimeout)
}
