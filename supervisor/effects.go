package supervisor

import (
	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// The night's part of the jobs' side-effect ledgers (package effects):
// before each attempt it gives the job's ledger what the servers' tools/list
// said of their tools and the job's side_effects setting, and tells the
// attempt which calls earlier attempts already made; after each attempt it
// journals the calls the attempt added, each once.

// keepToolHints remembers what a probe listed of a server's tools.
func (n *night) keepToolHints(server string, hints map[string]probe.ToolHints) {
	if hints == nil {
		return
	}
	if n.toolHints == nil {
		n.toolHints = map[string]map[string]effects.Hints{}
	}
	m := make(map[string]effects.Hints, len(hints))
	for tool, h := range hints {
		m[tool] = effects.Hints{ReadOnly: h.ReadOnly, Destructive: h.Destructive, Idempotent: h.Idempotent}
	}
	n.toolHints[server] = m
}

// prepareEffects readies job's ledger for an attempt and returns what the
// attempt is told of the calls earlier ones made ("" for none). A ledger
// that cannot be written is logged: the attempt runs, unprotected.
func (n *night) prepareEffects(job *jobs.Job, attempt int) string {
	path := statedir.Effects(n.b.StateDir, n.runID, job.Name)
	tools := map[string]map[string]effects.Hints{}
	for _, s := range job.Servers {
		if h, ok := n.toolHints[s]; ok {
			tools[s] = h
		}
	}
	if err := effects.Prepare(path, tools, job.SideEffects == jobs.AllowRepeat); err != nil {
		n.log.Error().Err(err).Str("job", job.Name).Msg("side-effect ledger: repeated calls are not checked in this attempt")
		return ""
	}
	l, err := effects.Read(path)
	if err != nil {
		n.log.Error().Err(err).Str("job", job.Name).Msg("side-effect ledger")
		return ""
	}
	return effects.Told(l, attempt)
}

// journalEffects journals the calls in job's ledger the journal does not
// have yet.
func (n *night) journalEffects(job string) {
	l, err := effects.Read(statedir.Effects(n.b.StateDir, n.runID, job))
	if err != nil {
		n.log.Error().Err(err).Str("job", job).Msg("side-effect ledger")
		return
	}
	if n.effectsJournaled == nil {
		n.effectsJournaled = map[string]int{}
	}
	for _, c := range l.Calls {
		if c.N <= n.effectsJournaled[job] {
			continue
		}
		n.append(journal.Event{Time: c.At, Type: journal.SideEffect, Job: job, Attempt: c.Attempt,
			Server: c.Server, Tool: c.Name(), Effect: c.N, Input: c.Digest})
		n.effectsJournaled[job] = c.N
	}
	key := tasksKey(job)
	for _, t := range l.Tasks {
		if t.N <= n.effectsJournaled[key] {
			continue
		}
		n.append(journal.Event{Time: t.At, Type: journal.TaskLost, Job: job, Attempt: t.Attempt,
			Server: t.Server, Tool: t.Name(), Effect: t.N, Task: t.ID, ToolUseID: t.ToolUseID})
		n.effectsJournaled[key] = t.N
	}
}

// tasksKey keeps a job's journaled tasks apart from its calls in
// effectsJournaled ("\x00" is in no job's name).
func tasksKey(job string) string { return job + "\x00tasks" }

// lostTasks says which calls of attempt of job a server turned into a
// task nobody follows, e.g. "exports (mcp__exports__run)" or, when the
// task's id is known, "exports (mcp__exports__run, task t-7)"; none when
// the ledger says nothing of it.
func (n *night) lostTasks(job string, attempt int) []string {
	l, err := effects.Read(statedir.Effects(n.b.StateDir, n.runID, job))
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range l.TasksOf(attempt) {
		what := t.Name()
		if t.ID != "" {
			what += ", task " + t.ID
		}
		out = append(out, t.Server+" ("+what+")")
	}
	return out
}

// journaledEffects is, by job, the highest side-effect number a journal
// has: a resumed night journals only those after it.
func journaledEffects(events []journal.Event) map[string]int {
	out := map[string]int{}
	for _, ev := range events {
		key := ev.Job
		switch ev.Type {
		case journal.SideEffect:
		case journal.TaskLost:
			key = tasksKey(ev.Job)
		default:
			continue
		}
		out[key] = max(out[key], ev.Effect)
	}
	return out
}

// withTold adds what the attempt is told of earlier calls to its feedback.
func withTold(feedback, told string) string { return text.JoinNonEmpty("\n\n", feedback, told) }
