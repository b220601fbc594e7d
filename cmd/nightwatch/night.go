package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/daemon"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/batchlock"
	"github.com/nightwatch-dev/nightwatch/internal/batchsecrets"
	"github.com/nightwatch-dev/nightwatch/internal/hookexe"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/preflight"
	"github.com/nightwatch-dev/nightwatch/session"
	"github.com/nightwatch-dev/nightwatch/supervisor"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

func loadBatch(path string) (*jobs.Batch, error) {
	b, err := jobs.Load(path, lookupEnv)
	batchsecrets.RememberBatch(b)
	return b, err
}

// logWriter writes human lines on a terminal and zerolog JSON lines
// otherwise (launchd, cron and systemd capture stderr to a file).
func logWriter() io.Writer {
	if isTerminal(os.Stderr) {
		return zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05"}
	}
	return os.Stderr
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printProgress prints the night's state to a terminal when it changes:
// one line per running job, one per waiting job, then the counts.
func printProgress() func(plan.Progress) {
	last := ""
	return func(p plan.Progress) {
		var b strings.Builder
		for _, r := range p.Running {
			fmt.Fprintf(&b, "  running  %s\n", r)
		}
		for _, w := range p.Waiting {
			fmt.Fprintf(&b, "  waiting  %s\n", w)
		}
		fmt.Fprintf(&b, "  %d/%d done, %d failed, %d skipped\n", p.Done, p.Total, p.Failed, p.Skipped)
		// Running times change every second; print when the jobs do.
		key := fmt.Sprint(len(p.Running), p.Waiting, p.Done, p.Failed, p.Skipped)
		if key != last {
			last = key
			fmt.Fprint(os.Stderr, b.String())
		}
	}
}

func selfPath() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the nightwatch binary for the sessions' hook: %w", err)
	}
	// Sessions get the hook executable beside it, checked once here: a
	// missing or mismatched one is said now, and `nightwatch hook` is
	// injected instead.
	if c := hookexe.Choose(context.Background(), p); c.Note != "" {
		fmt.Fprintln(os.Stderr, "nightwatch: warning: "+c.Note)
	}
	return p, nil
}

func newPreflightCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "preflight FILE",
		Short: "Validate a batch, pre-warm and probe every MCP server its jobs need",
		Long: `Validate the batch file, then pre-warm and probe every MCP server any job needs, concurrently:
stdio servers are started once with the batch's prewarm_timeout (so npx/uvx downloads happen now),
HTTP servers get a wake-up handshake with retries (Retry-After honoured). Verdicts go into the
batch's health cache, so each session's first call is a cache hit.
Exit 0: all healthy. 1: some unhealthy (named). 2: the file is invalid.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := jobs.LoadWith(args[0], lookupEnv, jobs.LoadOptions{AgentOptional: true})
			batchsecrets.RememberBatch(b)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return exitCode(2)
			}
			for _, w := range b.Warnings {
				warnStderr("nightwatch: warning: " + w)
			}
			if err := os.MkdirAll(b.StateDir, 0o700); err != nil {
				return err
			}
			// The verdicts go where the night's would: the batch's cache,
			// and its events file, by the preflight.
			checker := healthcheck.New(&healthcheck.Store{Path: statedir.Cache(b.StateDir), Warn: warnStderr}, b.Health.Settings(),
				healthcheck.Options{EventsPath: statedir.Events(b.StateDir), Warn: warnStderr})
			report := preflight.Run(cmd.Context(), b, preflight.Options{
				Checker: checker, Getenv: lookupEnv, Warn: warnStderr, Login: true,
			})
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(report); err != nil {
					return err
				}
			} else {
				printPreflight(cmd.OutOrStdout(), report)
			}
			if !report.Healthy {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func nightOptions(fresh bool) (supervisor.NightOptions, error) {
	bin, err := selfPath()
	if err != nil {
		return supervisor.NightOptions{}, err
	}
	return supervisor.NightOptions{Binary: bin, Env: os.Environ(), Fresh: fresh, LogWriter: logWriter(),
		AfterNight: func(b *jobs.Batch, s *supervisor.NightSummary) string { return morningReport(b, s) }}, nil
}

// morningReport writes the night's report and says where, or why not.
func morningReport(b *jobs.Batch, s *supervisor.NightSummary) string {
	path, err := writeNightReport(b, s)
	if err != nil {
		warnStderr("nightwatch: the morning report could not be written: " + err.Error())
		return ""
	}
	return fmt.Sprintf("report: %s (and .md)", path)
}

// printDryRun prints what each job's first attempt would run, and runs
// nothing.
func printDryRun(w io.Writer, b *jobs.Batch) error {
	bin, err := selfPath()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "dry run of %s: nothing is started or written; secrets are masked\n\n", b.File)
	for _, j := range b.Jobs {
		p, err := session.DryRun(session.Spec{Batch: b, Job: j, RunID: "dry-run", Attempt: 1, Binary: bin, Env: os.Environ()})
		if err != nil {
			return err
		}
		p.Print(w)
		fmt.Fprintln(w)
	}
	return nil
}

func newRunCmd() *cobra.Command {
	var fresh, dryRun bool
	var maintenance, retryPause time.Duration
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run the night: preflight, then every job of the batch",
		Long: `Preflight, then run every job of the batch as a headless Claude Code session with nightwatch's
hook injected, deferring jobs whose servers are down and maintaining servers between jobs.
An unfinished run of the same batch is resumed (no done job runs again); --fresh starts anew.
Exit 0: every job done. 1: some job failed or was skipped. 2: invalid file, or another run
holds the batch's lock. 3: the journal could not be written, so no more jobs started (the
next run resumes the night; no finished job runs again).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := loadBatch(args[0])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return exitCode(2)
			}
			if dryRun {
				if err := printDryRun(cmd.OutOrStdout(), b); err != nil {
					fmt.Fprintln(os.Stderr, "nightwatch:", err)
					return exitCode(2)
				}
				return nil
			}
			opts, err := nightOptions(fresh)
			if err != nil {
				return err
			}
			opts.Maintenance, opts.RetryPause = maintenance, retryPause
			return runAndReport(cmd, b, opts)
		},
	}
	cmd.Flags().BoolVar(&fresh, "fresh", false, "start a new run even if the last one did not finish")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print each job's exact claude command, allowed tools, verify command, MCP config (as the session gets it) and environment names (secrets masked); run nothing")
	cmd.Flags().DurationVar(&maintenance, "maintenance-interval", 10*time.Second, "how often unhealthy servers are re-probed while jobs wait")
	cmd.Flags().DurationVar(&retryPause, "retry-pause", 30*time.Second, "the pause before a job's second attempt (it grows by as much for each further attempt)")
	return cmd
}

func newDaemonCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "daemon FILE",
		Short: "Run the batch on its schedule (robfig/cron syntax); SIGTERM stops it cleanly",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := nightOptions(false)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			err = daemon.Run(ctx, func() (*jobs.Batch, error) { return loadBatch(args[0]) }, opts)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return exitCode(2)
			}
			return nil
		},
	}
}

// runAndReport runs the night of b (run, rerun), prints its summary and
// the morning report's path, and turns the end into the exit code.
func runAndReport(cmd *cobra.Command, b *jobs.Batch, opts supervisor.NightOptions) error {
	var reportLine string
	opts.AfterNight = func(b *jobs.Batch, s *supervisor.NightSummary) string {
		reportLine = morningReport(b, s)
		return reportLine
	}
	if isTerminal(os.Stderr) {
		opts.Progress = printProgress()
	}
	summary, err := supervisor.RunNight(cmd.Context(), b, opts)
	switch {
	case errors.Is(err, batchlock.ErrLocked), errors.Is(err, supervisor.ErrUnfinished):
		fmt.Fprintln(os.Stderr, "nightwatch:", err)
		return exitCode(2)
	case errors.Is(err, supervisor.ErrStopped):
		fmt.Fprintln(os.Stderr, "nightwatch:", err)
		return exitCode(1)
	case errors.Is(err, supervisor.ErrJournal):
		if summary != nil {
			supervisor.PrintSummary(cmd.OutOrStdout(), summary)
		}
		if reportLine != "" {
			fmt.Fprintln(cmd.OutOrStdout(), reportLine)
		}
		fmt.Fprintln(os.Stderr, "nightwatch: NIGHT STOPPED:", err)
		return exitCode(3)
	case err != nil:
		return err
	}
	supervisor.PrintSummary(cmd.OutOrStdout(), summary)
	if reportLine != "" {
		fmt.Fprintln(cmd.OutOrStdout(), reportLine)
	}
	if !summary.AllDone() {
		return exitCode(1)
	}
	return nil
}
