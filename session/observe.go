package session

import "github.com/nightwatch-dev/nightwatch/healthcheck"

// Killer is who ended a session before it ended on its own
// (Outcome.KilledBy). The journal stores its word.
type Killer string

// Who killed a session.
const (
	KilledTimeout Killer = "timeout" // the job's timeout
	KilledStall   Killer = "stall"   // no stream output for the job's stall_timeout
	// KilledStopped: the night was stopped (SIGTERM, a daemon's shutdown,
	// a worker that stops): the attempt does not count.
	KilledStopped Killer = "stopped"
	// KilledAbandoned: the night stopped the attempt because it cannot do
	// its work (a server it needs is unusable; Abandon).
	KilledAbandoned Killer = "abandoned"
	// KilledBudget: the night stopped the session because it went past
	// the job's own budget (max_turns) although Claude Code was given it.
	KilledBudget Killer = "budget"
	// KilledCrashed: a cluster's coordinator took the attempt for lost
	// (its worker died, River rescued it).
	KilledCrashed Killer = "crashed"
)

// ServerStatus is what Claude Code says of an MCP server: its init event's
// statuses, and ServerNotConnected for a tool result that said so.
type ServerStatus string

// The statuses of a server.
const (
	ServerConnected ServerStatus = "connected"
	ServerFailed    ServerStatus = "failed"
	ServerNeedsAuth ServerStatus = "needs-auth"
	ServerPending   ServerStatus = "pending"
	// ServerNotConnected: a tool result said the server is not connected,
	// mid-session.
	ServerNotConnected ServerStatus = "not-connected"
)

// Unusable says whether the session cannot call the server: it failed to
// connect, needs authentication, or was lost.
func (s ServerStatus) Unusable() bool {
	return s == ServerFailed || s == ServerNeedsAuth || s == ServerNotConnected
}

// ObservationKind is what an Observation is of. Its words are stored in a
// cluster's nightwatch_observations.kind.
type ObservationKind string

// The kinds of observation.
const (
	// SawServer: Server could not be used, Status says how.
	SawServer ObservationKind = "server"
	// SawMissingTool: the model called Tool, which the session lacks.
	SawMissingTool ObservationKind = "tool"
	// SawUnusable: Server, one of the job's own, cannot be used by the
	// session, Why says why: the night stops the attempt early.
	SawUnusable ObservationKind = "unusable"
	// SawProcess: the session's process group PGID started.
	SawProcess ObservationKind = "process"
	// SawHookEvents: what the hooks of Host wrote to its events file
	// (servers' changes of state, blocked calls), for the night's journal.
	SawHookEvents ObservationKind = "events"
	// SawModelTurn: the model's API answered the attempt's first request
	// (once per attempt): an outage the night waited out is over.
	SawModelTurn ObservationKind = "model-turn"
)

// Observation is one thing a running attempt saw, as the session, the
// local executor and a cluster's worker tell the night: the one value,
// which a worker also keeps in its spool as this JSON and writes to the
// cluster's nightwatch_observations column by column (cluster/queue).
// Kind says which of the other fields are set.
type Observation struct {
	Job     string `json:"job,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Host is the cluster worker's host that saw it ("" on one host).
	Host   string              `json:"host,omitempty"`
	Kind   ObservationKind     `json:"kind"`
	Server string              `json:"server,omitempty"`
	Status ServerStatus        `json:"status,omitempty"`
	Tool   string              `json:"tool,omitempty"`
	Why    string              `json:"why,omitempty"`
	PGID   int                 `json:"pgid,omitempty"`
	Events []healthcheck.Event `json:"events,omitempty"`
}

// Observer hears what a running session sees, as it sees it. Calls come
// from Run's goroutine, one at a time, never after Run returned; a slow
// observer slows the reading of the stream.
type Observer interface {
	Observe(Observation)
}

// ObserverFunc is an Observer.
type ObserverFunc func(Observation)

// Observe calls f.
func (f ObserverFunc) Observe(o Observation) { f(o) }

// Ended is how an attempt ended, and where.
type Ended struct {
	Job     string
	Attempt int
	Outcome Outcome
	// Host is the cluster worker's host that ran it ("" on one host).
	Host string
}

// Attempt is one attempt of a job the night starts: which one, and what
// its prompt is told.
type Attempt struct {
	Job     string
	Attempt int
	// Feedback is what the last attempt's verify said ("" for none).
	Feedback string
	// Resume is the Claude session to resume, ResumeWhy how the last
	// attempt ended ("" starts a fresh session).
	Resume, ResumeWhy string
}

// Starting is how an attempt is about to start, for the journal's
// job-started line, written before it runs.
type Starting struct {
	// Folder is the attempt's folder on this host ("" on a cluster).
	Folder string
	// Resume is the Claude session it resumes; "" when it starts afresh
	// (also when the host that has the session is gone).
	Resume string
	// Hosts are the cluster labels it may run on (none: any worker).
	Hosts []string
}

// Report is what an executor tells the night of its attempts, in the
// order it happened (an attempt's observations before its end): Ended is
// set for an end, else Seen is one observation.
type Report struct {
	Seen  Observation
	Ended *Ended
}
