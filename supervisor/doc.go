// Package supervisor runs a night: one batch of `claude -p` sessions,
// unattended, from its preflight to its notification. Its one job is the
// night: it carries what happens to the plan (supervisor/plan, the night's
// state machine and the only owner of a job's fate) and does what the plan
// decides.
//
// Where each part lives:
//
//	night.go        RunNight: lock, journal (new or resumed), preflight, the loop, the end
//	loop.go         the one goroutine that owns the plan, the journal and the night's cache writes;
//	                its one stop path
//	executor_local.go  the executor interface the loop sees, and the one that runs attempts on this host
//	cluster.go      a cluster's coordinator lock and shared journal (its executor is queue.Executor)
//	maintenance.go  between jobs: re-probe, reconnect, drop stale cache entries
//	resume.go       a retry that resumes a session: its servers first
//	events.go       the hooks' events file, copied into the journal
//	effects.go      the jobs' side-effect ledgers, before and after each attempt
//	leftovers.go    after a crash: end the sessions the dead supervisor left
//	fresh.go        `run --fresh`: end the dead night before a new one
//	window.go       how long an unfinished night may be resumed
//	over.go         whether a night is over, for an onlooker (`logs --follow`, `status --watch`)
//	summary.go      the night's table for the terminal and the notification
//
// The preflight is the preflight package's, the notification notify's,
// the batch's lock internal/batchlock's, its schedule daemon's; one
// attempt of a job is the session package's; the journal's vocabulary is
// the journal package's; a job's fate, and the night as `status` shows
// it, are supervisor/plan's; every health verdict is healthcheck's; the
// model's API failure classes, its check, its waits and its trial are
// modelapi's.
package supervisor
