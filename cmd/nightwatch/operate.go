package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/doctor"
	"github.com/nightwatch-dev/nightwatch/install"
	"github.com/nightwatch-dev/nightwatch/internal/batchsecrets"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/serversecrets"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [FILE]",
		Short: "Find every known misconfiguration: fail-open, ~ in paths, shadowed servers, the launchd env trap, the cache, hooks, reconnects, the agent",
		Long: `Run every check and print one line per check (ok / warn / fail), each failure with its fix.
With a batch file, servers are checked with the environment the night will have (launchd and
cron give no login shell), not your shell's. Exit 1 when any check fails.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cwd, _ := os.Getwd()
			o := doctor.Options{Home: homeDir(), Cwd: cwd}
			if len(args) == 1 {
				o.BatchFile = args[0]
				batchsecrets.RememberBatchFile(args[0], lookupEnv)
			}
			serversecrets.RememberServers(mcpconfig.Resolve(knobs.FromEnv(lookupEnv, o.Home).ConfigOptions(cwd, o.Home, lookupEnv)))
			checks := doctor.Run(cmd.Context(), o)
			if asJSON {
				enc := json.NewEncoder(redact.NewWriter(cmd.OutOrStdout()))
				enc.SetIndent("", "  ")
				if err := enc.Encode(checks); err != nil {
					return err
				}
			} else {
				doctor.Print(redact.NewWriter(cmd.OutOrStdout()), checks)
			}
			if doctor.Failed(checks) {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newInstallCmd(uninstall bool) *cobra.Command {
	var dryRun, worker bool
	var labels []string
	var maxParallel int
	use, short := "install", "Install the batch on a scheduler: launchd (macOS), systemd (user timer), cron or schtasks (Windows Task Scheduler)"
	if uninstall {
		use, short = "uninstall", "Remove what `nightwatch install` installed"
	}
	cmd := &cobra.Command{
		Use:   use + " launchd|systemd|cron|schtasks FILE [--worker]",
		Short: short,
		Long: short + `.
The generated files use absolute paths only (the binary, the batch, the logs), spell out the
environment the night needs (PATH, HOME, the variables the batch uses), never set fail-open, and
send stdout and stderr to log files under the batch's state folder. --dry-run prints what would
be written and run (secret values masked). With --worker (a batch with a cluster: section), the
entry is the host's worker, ` + "`nightwatch worker FILE [--label L]... [--max-parallel N]`" + `, started now
and kept running (cron: started at boot only), under its own name beside the night's.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := install.Kind(args[0])
			// --label and --max-parallel are the worker's flags: without
			// --worker they would be silently dropped from the night.
			if !worker && (len(labels) > 0 || cmd.Flags().Changed("max-parallel")) {
				fmt.Fprintln(os.Stderr, "nightwatch: --label and --max-parallel are flags of the worker: add --worker to "+use+" the batch's worker")
				return exitCode(2)
			}
			b, err := loadBatch(args[1])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return exitCode(2)
			}
			if worker && !uninstall && b.Cluster == nil {
				fmt.Fprintf(os.Stderr, "nightwatch: %s has no cluster: section: --worker installs a worker of a night that runs over several hosts (add `cluster: {database_env: NIGHTWATCH_DATABASE_URL}`), or install the night without --worker\n", args[1])
				return exitCode(2)
			}
			bin, err := selfPath()
			if err != nil {
				return err
			}
			o := install.Options{Binary: bin, Batch: b, Home: homeDir(), UID: os.Getuid(), Getenv: lookupEnv}
			if worker {
				o.Worker = &install.WorkerOptions{Labels: labels, MaxParallel: maxParallel}
			}
			plan := install.PlanInstall
			if uninstall {
				plan = install.PlanUninstall
			}
			p, err := plan(kind, o)
			if err != nil {
				return err
			}
			if dryRun {
				p.Print(cmd.OutOrStdout())
				return nil
			}
			if err := install.Apply(cmd.Context(), p, install.RunCommand); err != nil {
				return err
			}
			p.Print(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be written and run, change nothing")
	cmd.Flags().BoolVar(&worker, "worker", false, "the batch's cluster worker (nightwatch worker FILE, kept running) instead of its night, beside the night's entry")
	// On uninstall they are accepted (an install's command line with
	// "un" in front works) and change nothing: the entry's name is the batch's.
	cmd.Flags().StringArrayVar(&labels, "label", nil, "with --worker: a label of the worker, for the jobs pinned by hosts: (repeatable)")
	cmd.Flags().IntVar(&maxParallel, "max-parallel", 0, "with --worker: attempts the worker runs at once (default: the batch's max_parallel)")
	return cmd
}
