// Package plan is the night's job state machine, and the only owner of a
// job's fate: every job's phase, and the rules that move it (needs, defer,
// skip, run anyway, retries with a growing pause, the deadline,
// max_cost_usd, max_defer, the model's API). It does no I/O and reads no
// clock: the supervisor's loop, its only owner, tells it what happened
// with Plan.Step and does the Actions Step returns. Every change a
// recorded event makes goes through Plan.Apply, so a resumed night folds
// its journal (Plan.Fold) into the plan the dead supervisor had, and
// `status` folds the same journal into the same plan (LiveNight).
//
//	pending ──needs met, servers healthy──► running ──done──► done
//	   │  ▲                                  │  │
//	   │  └──servers back── deferred ◄──down─┘  └─failed, retries left──► waiting to retry ──pause over──► (as pending)
//	   │                      │                 └─failed, none left──► failed
//	   └──need failed/skipped, down+skip, deadline, cost, max_defer──► skipped
//
// How an attempt's failure is judged (attemptEnded):
//   - the job's own budget (max_turns, max_cost_usd) stopped it: failed,
//     "budget exceeded", not retried (the next attempt would spend it
//     again);
//   - a permission rule denied a tool of the job's own servers: failed, not
//     retried (the same settings deny again);
//   - the session could not use a server the job needs: back to deferred,
//     as if the server had been down at the start (skipped for
//     on_unhealthy: skip; failed after MaxBounces such attempts, for a
//     server that probes healthy but no session can use: an attempt
//     after which the night's probe found the server down met an outage
//     (ServerDown, outage-confirmed) and does not count, up to
//     MaxBouncesInAll in all);
//   - anything else (verify included): retried while retries last, the
//     next prompt told what verify said.
//
// An attempt that failed on the model's API (a usage or rate limit, an
// outage, a refused login) follows the table in apirules.go first: the
// night pauses, waits for the API or stops. A retry after real work
// resumes the same Claude session (endedAfterWork).
//
// Where each part lives:
//
//	plan.go      the jobs' phases, the events and actions, Step and the job rules
//	fold.go      Apply, the one place a recorded event changes the plan; Fold, resume
//	apirules.go  a failed attempt's API class rule applied to its job; the night's
//	             pause, stop, API checks and trial (the rules, waits and trial are modelapi's)
//	live.go      the night as `status` shows it: the journal folded through the plan
package plan
