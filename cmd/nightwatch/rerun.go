package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/report"
)

func newRerunCmd() *cobra.Command {
	var runID string
	var maintenance time.Duration
	cmd := &cobra.Command{
		Use:   "rerun FILE [--run ID]",
		Short: "Run again, as a new night, only the jobs a finished night failed, skipped or left unverified",
		Long: `Read a finished night's journal (the newest unless --run names one), take the jobs its report's
"what to do now" lists to run again (failed, skipped, unfinished, or done without a server they
needed), and run just those as a new night: preflight, the same rules, a journal and a report
of its own. A need on a job that is not re-run is met (that job finished well). The night's
state machine decides each job's fate as in any night; rerun only selects the jobs.
Exit codes as for run; 2 also when a run of the batch has not finished (run resumes it).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := loadBatch(args[0])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return exitCode(2)
			}
			var night *report.Night
			if b.Cluster != nil {
				night, err = clusterNight(cmd.Context(), b, runID)
			} else {
				night, err = localNight(b.StateDir, runID)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "nightwatch:", err)
				return exitCode(2)
			}
			if !night.Finished {
				fmt.Fprintf(os.Stderr, "nightwatch: run %s has not finished: `nightwatch run %s` resumes it\n", night.RunID, b.File)
				return exitCode(2)
			}
			night.Advise(b)
			names := night.RerunJobs()
			if len(names) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "run %s: nothing to re-run (%s)\n", night.RunID, night.Verdict())
				return nil
			}
			only, err := b.Only(names)
			if err != nil {
				fmt.Fprintln(os.Stderr, "nightwatch:", err)
				return exitCode(2)
			}
			fmt.Fprintf(os.Stderr, "nightwatch: re-running %s of run %s as a new night\n", strings.Join(names, ", "), night.RunID)
			opts, err := nightOptions(false)
			if err != nil {
				return err
			}
			opts.Maintenance, opts.RerunOf = maintenance, night.RunID
			return runAndReport(cmd, only, opts)
		},
	}
	cmd.Flags().StringVar(&runID, "run", "", "the night to re-run jobs of (a journal's name under state_dir/runs, without .jsonl); default the newest")
	cmd.Flags().DurationVar(&maintenance, "maintenance-interval", 10*time.Second, "how often unhealthy servers are re-probed while jobs wait")
	return cmd
}
