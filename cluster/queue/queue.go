// Package queue runs a cluster's attempts as River jobs: the coordinator
// (`nightwatch run` with a cluster: section) enqueues each attempt its
// night's plan starts and hears how it went, through Executor, the night's
// executor on a cluster; workers (`nightwatch worker`)
// on every host run them with session.Run, at most max_parallel at a time,
// only the jobs pinned to their labels or to none.
//
// An attempt is one River job with MaxAttempts 1, unique by its arguments
// (run, job, attempt), so a coordinator that enqueues twice runs it once.
// River never retries it: the night's plan does, as it does on one host.
// A worker that dies mid-attempt leaves its River job running; River's
// rescuer discards it after rescue_after, and the coordinator reports that
// attempt's end as a crash, counted once.
//
// When the database goes away, nobody's work stops and no end is lost:
//
//   - A worker writes each attempt's end to its host's spool (spool.go)
//     before the database, and delivers it, retrying, when the database
//     answers; a worker that stopped or died before that leaves it to the
//     next worker of its host. Delivery is idempotent, and the first end
//     recorded is the attempt's.
//   - A worker keeps its sessions while it cannot heartbeat, up to
//     FenceAfter (30 s); then it stops them.
//   - The coordinator takes a worker for dead (workerDead) after DeadAfter
//     (10 s) without a heartbeat when its presence connection is gone too
//     (its process died), after SilentAfter (40 s) when it is not; and it
//     judges no heartbeat across a gap in its own reads of the database:
//     after one, every worker has SilentAfter to be heard again.
//   - A worker's claim of an attempt refreshes its heartbeat.
//   - A worker that starts while the database does not answer waits for
//     it at each step of its start (start.go, retryStart), with a bounded
//     backoff, until it answers or the worker is stopped.
//
// So a database outage shorter than FenceAfter stops nothing and reruns
// nothing, and a worker cut off alone has stopped its sessions before the
// coordinator runs their jobs elsewhere: an attempt never runs on two
// hosts at once.
//
// What crosses hosts besides River's rows: nightwatch_attempts (where an
// attempt ran, its outcome, the coordinator's request to abandon it) and
// nightwatch_observations (what the session saw while it ran), both read
// by the executor's pump in order, each attempt's observations before its
// end (session.Observation, session.Ended); nightwatch_effects, the jobs'
// side-effect ledgers shared (effects.go): a worker adds its attempt's
// calls while it runs and with its end, and brings the other hosts' into
// its own ledger before an attempt; the coordinator brings them into its
// own before it hears an end, so the retry's prompt names them.
package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// AttemptArgs are one attempt, as River stores it. Everything else a
// worker needs is in its own copy of the batch file.
type AttemptArgs struct {
	Batch     string `json:"batch"`
	Run       string `json:"run"`
	Job       string `json:"job"`
	Attempt   int    `json:"attempt"`
	Feedback  string `json:"feedback,omitempty"`
	Resume    string `json:"resume,omitempty"`
	ResumeWhy string `json:"resumeWhy,omitempty"`
	// Tools and AllowRepeat are the job's side-effect ledger's settings
	// (effects.Prepare) as the coordinator readied them: what the
	// servers' tools/list said of each tool, and the job's side_effects.
	Tools       map[string]map[string]effects.Hints `json:"tools,omitempty"`
	AllowRepeat bool                                `json:"allowRepeat,omitempty"`
}

// Kind is River's name for an attempt.
func (AttemptArgs) Kind() string { return "nightwatch_attempt" }

// QueueName is the River queue of batch's jobs pinned to label ("" for
// the jobs pinned to nobody). River allows [a-z0-9_-], 64 bytes: a
// readable prefix and a hash that keeps different names apart.
func QueueName(batch, label string) string {
	sum := sha256.Sum256([]byte(batch + "\x00" + label))
	name := "nw-" + slug(batch, 20)
	if label != "" {
		name += "-" + slug(label, 20)
	}
	return name + "-" + hex.EncodeToString(sum[:5])
}

func slug(s string, max int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= max {
			break
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		return "x"
	}
	return out
}

// Queues are the River queues a worker with labels takes jobs from: the
// batch's common queue and one per label.
func Queues(b *jobs.Batch, labels []string) []string {
	out := []string{QueueName(b.Name, "")}
	for _, l := range labels {
		out = append(out, QueueName(b.Name, l))
	}
	return out
}
