// Package daemon runs a batch on its schedule: a night
// (supervisor.RunNight) each time its cron schedule comes, the batch file
// read again before each, never two nights at once.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"

	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/supervisor"
)

// Run runs the batch on its schedule until ctx ends. The batch file is
// read again before each night, so an edit takes effect at the next run
// without a restart; a file that became invalid skips that night, loudly.
// Never two nights at once: a night still running when the next is due
// makes that one skip (and the batch lock stops a manual `run` too).
func Run(ctx context.Context, load func() (*jobs.Batch, error), opts supervisor.NightOptions) error {
	b, err := load()
	if err != nil {
		return err
	}
	if b.Schedule == "" {
		return fmt.Errorf("%s: the batch has no schedule; add one (e.g. schedule: \"0 2 * * *\") or use `nightwatch run`", b.File)
	}
	sched, err := cron.ParseStandard(b.Schedule)
	if err != nil {
		return fmt.Errorf("%s: schedule %q: %w", b.File, b.Schedule, err)
	}
	w := opts.LogWriter
	if w == nil {
		w = io.Discard
	}
	log := zerolog.New(w).With().Timestamp().Logger()
	c := cron.New(cron.WithChain(cron.SkipIfStillRunning(cronLogger{log})))
	c.Schedule(sched, cron.FuncJob(func() {
		b, err := load()
		if err != nil {
			log.Error().Err(err).Msg("the batch file cannot be read; this night is skipped")
			return
		}
		log.Info().Str("batch", b.Name).Msg("night starting")
		summary, err := supervisor.RunNight(ctx, b, opts)
		switch {
		case errors.Is(err, supervisor.ErrStopped):
			log.Warn().Msg("night stopped; the next start resumes it")
		case err != nil:
			log.Error().Err(err).Msg("night could not run")
		default:
			log.Info().Int("done", summary.Done).Int("failed", summary.Failed).Int("skipped", summary.Skipped).
				Str("journal", summary.Journal).Msg("night finished")
		}
	}))
	log.Info().Str("schedule", b.Schedule).Time("next", sched.Next(now(opts))).Msg("daemon waiting for the schedule")
	c.Start()
	<-ctx.Done()
	// Stop waits for a night in progress; it sees ctx ended and stops
	// its sessions, killing their process groups.
	<-c.Stop().Done()
	return nil
}

func now(o supervisor.NightOptions) time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// cronLogger lets robfig/cron log through zerolog.
type cronLogger struct{ log zerolog.Logger }

func (l cronLogger) Info(msg string, kv ...any) {
	l.log.Info().Fields(kv).Msg("cron: " + msg)
}

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error().Err(err).Fields(kv).Msg("cron: " + msg)
}
