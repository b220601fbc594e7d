package queue

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
)

// A worker's start (connect, migrate, shared health, register, River)
// waits for a database that does not answer, as a started worker rides out
// an outage: it tries again after startRetryFirst, doubling up to
// startRetryMax, for as long as its context lives. A refusal that waiting
// does not change (clusterdb.Unreachable is false: a wrong password, a
// schema newer than this nightwatch) ends the start at once.
const (
	startRetryFirst = 500 * time.Millisecond
	startRetryMax   = 15 * time.Second
)

// retryStart runs step until it succeeds, fails for a reason other than an
// unreachable database, or ctx ends; each failure is logged with the wait
// before the next try.
func retryStart(ctx context.Context, log zerolog.Logger, what string, step func(context.Context) error) error {
	wait := startRetryFirst
	for try := 1; ; try++ {
		err := step(ctx)
		if err == nil {
			if try > 1 {
				log.Info().Str("step", what).Int("tries", try).Msg("the cluster's database answers: the worker's start goes on")
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !clusterdb.Unreachable(err) {
			return err
		}
		log.Warn().Err(err).Str("step", what).Int("try", try).Dur("next_in", wait).
			Msg("the cluster's database does not answer while the worker starts: waiting for it")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, startRetryMax)
	}
}
