package hook

import (
	"fmt"
	"strings"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/hook/hot"
)

// The hook's part of a job's side-effect ledger (package effects): after a
// call that succeeded it records the call unless the tool is read-only,
// and before a call it refuses an exact repeat of one an earlier attempt
// of the job made. Only sessions of a job that keeps a ledger (effects.PathEnv
// set) read tool_input at all; every other call costs what it did.

// repeatDenied refuses the call when an earlier attempt of the job made
// the same successful call to a tool that is not read-only. A ledger it
// cannot read lets the call through, and says so.
func (h *handler) repeatDenied(server, tool string) (code int, denied bool) {
	earlier, err := hot.RepeatOf(h.env.Getenv, h.p, server, tool)
	if err != nil {
		h.say(fmt.Sprintf("nightwatch: %v; repeated calls are not checked", err))
		return ExitAllow, false
	}
	if earlier == nil {
		return ExitAllow, false
	}
	msg := effects.DenyReason(earlier)
	// The session's judge must not read this refusal as a permission rule's
	// denial or as a call lost with its server: it says which call it was.
	h.checker.Events.Append(healthcheck.Event{Time: h.now(), Kind: healthcheck.EventRepeatRefused,
		Session: h.p.SessionID, ToolUseID: h.p.ToolUseID, Server: server, Tool: h.p.ToolName})
	h.log.Info().Str("server", server).Str("tool", tool).Int("earlier_attempt", earlier.Attempt).Msg("repeat of a side effect refused")
	return hot.Deny(h.env.Stdout, h.env.Stderr, msg), true
}

// recordTask notes in the job's ledger that the failed call's server
// turned it into an MCP task the CLI cannot follow (healthcheck.TaskResultText,
// matched only in a failed call's error): the job is not done while that
// work runs on unseen.
func (h *handler) recordTask(server, tool string) {
	path, attempt, ok := hot.LedgerOf(h.env.Getenv)
	// The whole error is the CLI's sentence: a tool's own error text that
	// merely quotes it somewhere is not taken for it.
	if !ok || !strings.HasPrefix(strings.TrimSpace(h.p.Error), healthcheck.TaskResultText) {
		return
	}
	h.say(fmt.Sprintf("nightwatch: server %q answered %s with an MCP task this session cannot follow; the task runs on at the server", server, h.p.ToolName))
	// exec-server recorded it already, with its task id, when the server
	// is a stdio one: the tool_use_id makes them one call.
	if err := effects.RecordTask(path, attempt, server, tool, effects.TaskRef{ToolUseID: h.p.ToolUseID}, h.now()); err != nil {
		h.say(fmt.Sprintf("nightwatch: side-effect ledger: %v", err))
	}
}

// acceptedTask is the MCP task this call's server answered it with, from
// the job's ledger (exec-server records it under the call's tool_use_id
// before the answer leaves); nil when there is none, outside a job that
// keeps a ledger, or when the ledger cannot be read (recordEffect says so).
func (h *handler) acceptedTask() *effects.Task {
	path, _, ok := hot.LedgerOf(h.env.Getenv)
	if !ok || h.p.ToolUseID == "" {
		return nil
	}
	l, err := effects.Read(path)
	if err != nil {
		return nil
	}
	return l.TaskOf(h.p.ToolUseID)
}

// recordEffect adds a call that succeeded to the job's ledger (the ledger
// leaves out read-only tools, and a call whose server only accepted it as
// an MCP task: exec-server recorded that task, and its work is not done).
func (h *handler) recordEffect(server, tool string) {
	path, attempt, ok := hot.LedgerOf(h.env.Getenv)
	if !ok {
		return
	}
	// A read-only tool costs one read of the small file, no lock.
	if l, err := effects.Read(path); err == nil {
		if l.ReadOnly(server, tool) {
			return
		}
		if t := l.TaskOf(h.p.ToolUseID); t != nil {
			h.say(fmt.Sprintf("nightwatch: server %q answered %s with MCP task %q, which this session does not follow; the task runs on at the server", server, h.p.ToolName, t.ID))
			return
		}
	}
	in := effects.Input{Raw: []byte(h.p.Input)} // Record keys and digests it
	if h.p.InputCut {
		in = hot.InputOf(h.p)
	}
	if _, err := effects.Record(path, attempt, server, tool, in, h.now(), h.secrets...); err != nil {
		h.say(fmt.Sprintf("nightwatch: side-effect ledger: %v", err))
	}
}
