package queue

import (
	"context"
	"time"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// The jobs' side-effect ledgers on a cluster (package effects: the
// successful calls to tools that are not read-only, an exact repeat of one
// refused in a later attempt). Each host keeps its file, as one host does;
// nightwatch_effects shares them:
//
//   - a worker brings the calls every host shared into its own ledger
//     before an attempt (prepareEffects), with the ledger's settings the
//     coordinator gave (AttemptArgs.Tools, AllowRepeat): the session's
//     hooks refuse a repeat of a call made on another host;
//   - it shares its attempt's calls while the attempt runs (shareEffects,
//     with the events it forwards) and the rest with the attempt's end,
//     through the spool: a worker that dies mid-attempt has shared the
//     calls made up to half a second before;
//   - the coordinator brings them into its own ledger before the night
//     hears an end (Executor.mergeEffects), so that the night journals
//     them and tells the retry's prompt, as on one host.
//
// A first attempt reads nothing (no earlier attempt made a call), and the
// coordinator reads the ledger only for a job that has calls in it (the
// read of the ends says so): a job without side effects costs the
// database no statement.

// effectsWait bounds a read of the shared ledger before an attempt.
const effectsWait = 10 * time.Second

// prepareEffects readies this host's ledger of a's job. One that cannot
// be readied is logged: the attempt runs with what this host knows.
func (w *Worker) prepareEffects(ctx context.Context, a AttemptArgs) {
	path := statedir.Effects(w.Batch.StateDir, a.Run, a.Job)
	if err := effects.Prepare(path, a.Tools, a.AllowRepeat); err != nil {
		w.Log.Error().Err(err).Str("job", a.Job).Msg("side-effect ledger: repeated calls are not checked in this attempt")
		return
	}
	if a.Attempt <= 1 {
		return // no earlier attempt made a call
	}
	ctx, cancel := context.WithTimeout(ctx, effectsWait)
	defer cancel()
	calls, err := w.DB.Effects(ctx, a.Run, a.Job)
	if err != nil {
		w.Log.Error().Err(err).Str("job", a.Job).Int("attempt", a.Attempt).
			Msg("side-effect ledger: the calls other hosts made are unknown; only this host's are checked in this attempt")
		return
	}
	earlier := calls[:0]
	for _, c := range calls {
		if c.Attempt < a.Attempt {
			earlier = append(earlier, c)
		}
	}
	n, err := effects.Merge(path, earlier)
	if err != nil {
		w.Log.Error().Err(err).Str("job", a.Job).Msg("side-effect ledger: the calls other hosts made are not checked in this attempt")
		return
	}
	if n > 0 {
		w.Log.Info().Str("job", a.Job).Int("attempt", a.Attempt).Int("calls", n).Msg("side-effect ledger: calls of earlier attempts on other hosts are checked")
	}
}

// unsharedEffects are the calls attempt k made on this host that the
// database does not have yet.
func (w *Worker) unsharedEffects(k attemptKey) []effects.Call {
	l, err := effects.Read(statedir.Effects(w.Batch.StateDir, k.run, k.job))
	if err != nil {
		return nil
	}
	w.mu.Lock()
	sent := w.effectsSent[k]
	w.mu.Unlock()
	var out []effects.Call
	for _, c := range l.Of(k.attempt) {
		if c.N > sent {
			out = append(out, c)
		}
	}
	return out
}

// shareEffects sends the new calls of the running attempts; those the
// database does not take go with a later look, or with the attempt's end.
func (w *Worker) shareEffects(ctx context.Context) {
	w.mu.Lock()
	keys := make([]attemptKey, 0, len(w.running))
	for k := range w.running {
		keys = append(keys, k)
	}
	w.mu.Unlock()
	for _, k := range keys {
		calls := w.unsharedEffects(k)
		if len(calls) == 0 {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := w.DB.AddEffects(sctx, k.run, k.job, w.Host, calls)
		cancel()
		if err != nil {
			w.db.failed(err)
			return
		}
		w.mu.Lock()
		if _, running := w.running[k]; running {
			w.effectsSent[k] = max(w.effectsSent[k], calls[len(calls)-1].N)
		}
		w.mu.Unlock()
	}
}

// settingsOf are the ledger settings the coordinator readied for job's
// attempt (the night's prepareEffects wrote them to its own file).
func (e *Executor) settingsOf(job *jobs.Job) (map[string]map[string]effects.Hints, bool) {
	allow := job.SideEffects == jobs.AllowRepeat
	l, err := effects.Read(statedir.Effects(e.batch.StateDir, e.coord.Run, job.Name))
	if err != nil {
		return nil, allow
	}
	return l.Tools, allow
}

// mergeEffects brings the calls every host shared of job into the
// coordinator's own ledger, before the night hears the attempt's end.
func (e *Executor) mergeEffects(ctx context.Context, job string) {
	ctx, cancel := context.WithTimeout(ctx, effectsWait)
	defer cancel()
	calls, err := e.coord.DB.Effects(ctx, e.coord.Run, job)
	if err == nil {
		_, err = effects.Merge(statedir.Effects(e.batch.StateDir, e.coord.Run, job), calls)
	}
	if err != nil {
		e.log.Error().Err(err).Str("job", job).Msg("side-effect ledger: the calls the workers made are not in the night's ledger; the retry is not told of them")
	}
}
