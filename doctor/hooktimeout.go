package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nightwatch-dev/nightwatch/jobs"
)

const hookTimeoutTitle = "hook timeout"

// claudeHookTimeout is the timeout Claude Code gives a hook that sets
// none, in seconds (measured on both supported CLIs: SIGTERM at 600 s,
// reference claude-code-in-flight).
const claudeHookTimeout = 600

// hookTimeouts warns about a nightwatch PreToolUse hook installed by hand
// (user, project or managed settings) whose timeout is shorter than the
// longest hold of the batch's calls plus the probes and reconnects that
// end it (jobs.Batch.HookTimeout, the timeout the night writes into its
// own sessions): Claude Code kills the hook mid-hold and sends the call to
// the dead server. Without a batch the hold is the environment's
// (NIGHTWATCH_MAX_HOLD, default 2m), as the hook itself reads it.
func (e *env) hookTimeouts(context.Context) []Check {
	b := e.batch
	if b == nil {
		h := jobs.DefaultHealth()
		h.MaxHold, h.MaxHoldSet = e.knobs.MaxHold.V, true
		if e.knobs.ProbeTimeout.V > 0 {
			h.ProbeTimeout = e.knobs.ProbeTimeout.V
		}
		if e.knobs.ReconnectTimeout.V > 0 {
			h.ReconnectTimeout = e.knobs.ReconnectTimeout.V
		}
		b = &jobs.Batch{Health: h}
	}
	need := b.HookTimeout(nil)
	var out []Check
	seen := 0
	for _, sf := range e.settingsFiles() {
		s, err := readSettings(sf.path)
		if err != nil || s == nil {
			continue // unreadable settings are the hooks check's finding
		}
		cmds := s.commands()
		slices.SortFunc(cmds, func(a, b hookCommand) int { return strings.Compare(a.matcher+a.command, b.matcher+b.command) })
		for _, h := range cmds {
			if h.event != "PreToolUse" || !nightwatchHook.MatchString(h.command) {
				continue
			}
			seen++
			got, said := float64(claudeHookTimeout), "no timeout (Claude Code's default, 600 s)"
			if h.timeout != nil {
				got, said = *h.timeout, fmt.Sprintf(`"timeout": %g`, *h.timeout)
			}
			if got >= float64(need) {
				continue
			}
			out = append(out, Check{ID: "hook-timeout", Title: hookTimeoutTitle, Level: Warn,
				Detail: fmt.Sprintf("%s: the PreToolUse hook %q has %s, shorter than the %d s a held call needs "+
					"(the longest hold, %s, plus probes and reconnects): Claude Code kills the hook mid-hold and sends the call to the dead server",
					sf.path, h.command, said, need, b.LongestHoldOfAll()),
				Fix: fmt.Sprintf(`set "timeout": %d on that hook in %s (or lower max_hold)`, need, sf.path)})
		}
	}
	if len(out) == 0 && seen > 0 {
		out = append(out, ok("hook-timeout", hookTimeoutTitle,
			fmt.Sprintf("every PreToolUse hook installed by hand allows a held call's %d s", need)))
	}
	return out
}
