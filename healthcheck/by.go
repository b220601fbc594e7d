package healthcheck

// By says who or what made the health observation behind a change of a
// server's state. The events file and the night's journal carry it as the
// same word ("by").
type By string

// The observers of a server's health.
const (
	// ByProbe: a probe (a hook's, the night's check before a job, `nightwatch
	// probe`) answered.
	ByProbe By = "probe"
	// ByPreflight: the night's preflight probed the server before the first
	// job; its verdicts are the state the night starts from.
	ByPreflight By = "preflight"
	// ByMaintenance: the night's maintenance re-probed a server that was
	// down while jobs waited for it.
	ByMaintenance By = "maintenance"
	// ByReconnect: the server's reconnect command ran and a probe found it
	// back.
	ByReconnect By = "reconnect"
	// ByPassive: a real call worked.
	ByPassive By = "passive"
	// ByCallFailure: a real call failed in a way that opens the server.
	ByCallFailure By = "call-failure"
	// ByCallFailures: failed calls reached the failure threshold, or the
	// one trial call failed.
	ByCallFailures By = "call-failures"
	// BySessionInit: a session's init event said the client could not
	// connect to it.
	BySessionInit By = "session-init"
	// ByTrial: one call was let through a half-open server as its trial.
	ByTrial By = "trial"
	// ByReset: an operator removed the entry.
	ByReset By = "reset"
)
