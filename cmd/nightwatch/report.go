package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/cluster/clusterdb"
	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/batchsecrets"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/report"
	"github.com/nightwatch-dev/nightwatch/supervisor"
)

func newReportCmd() *cobra.Command {
	var runID, format, out, stateDir string
	var last, local bool
	cmd := &cobra.Command{
		Use:   "report [FILE] [--run ID | --last] [--local] [--format md|html|json] [-o FILE]",
		Short: "The morning report of a night: jobs, outages, blocked calls, totals",
		Long: `Build the report of a night from its journal and the batch's health cache. FILE is the batch
file (its state_dir holds the journals); without it, --state-dir (default ./.nightwatch).
The newest run is reported unless --run names one. Markdown reads well in a terminal and a chat
message; HTML is one self-contained file with an SVG timeline. With a cluster: section in FILE, the
night is read from the cluster's shared journal and the report says which host ran what; --local
reads this host's journal file instead.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := batchOf(args)
			if err != nil {
				return err
			}
			if runID != "" && last {
				runID = "" // --last wins, as before
			}
			var night *report.Night
			if b != nil && b.Cluster != nil && !local {
				night, err = clusterNight(cmd.Context(), b, runID)
			} else {
				dir := stateDir
				if b != nil {
					dir = b.StateDir
				}
				night, err = localNight(dir, runID)
			}
			if err != nil {
				return err
			}
			if b != nil {
				night.Advise(b)
			}
			var buf bytes.Buffer
			if err := render(night, format, &buf); err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err := cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			return atomicfile.WriteFile(out, buf.Bytes(), atomicfile.Mode)
		},
	}
	cmd.Flags().StringVar(&runID, "run", "", "the run to report (a journal's name under state_dir/runs, without .jsonl)")
	cmd.Flags().BoolVar(&last, "last", false, "report the newest run (the default)")
	cmd.Flags().BoolVar(&local, "local", false, "with a cluster: section, read this host's journal file (state_dir/runs), not the shared journal")
	cmd.Flags().StringVar(&format, "format", "md", "md, html or json")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&stateDir, "state-dir", ".nightwatch", "the state folder, when no batch file is given")
	return cmd
}

// stateDirOf is the state folder of the batch file in args, or fallback
// when none is given. A batch that does not load exits 2 with its
// problems, like every command that reads one.
func stateDirOf(args []string, fallback string) (string, error) {
	b, err := batchOf(args)
	if err != nil || b == nil {
		return fallback, err
	}
	return b.StateDir, nil
}

// batchOf loads the batch file in args (nil when none is given), its
// secrets remembered; one that does not load exits 2 with its problems.
func batchOf(args []string) (*jobs.Batch, error) {
	if len(args) == 0 {
		return nil, nil
	}
	b, err := jobs.LoadWith(args[0], lookupEnv, jobs.LoadOptions{Reading: true})
	batchsecrets.RememberBatch(b)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return nil, exitCode(2)
	}
	return b, nil
}

// localNight is the night of runID (the newest when "") from the journal
// files of state folder dir.
func localNight(dir, runID string) (*report.Night, error) {
	journal := statedir.Journal(dir, runID)
	if runID == "" {
		j, err := report.LatestJournal(dir)
		if err != nil {
			return nil, err
		}
		journal = j
	}
	return report.Build(journal, statedir.Cache(dir))
}

func render(n *report.Night, format string, w io.Writer) error {
	switch format {
	case "md", "markdown":
		return n.Markdown(w)
	case "html":
		return n.HTML(w)
	case "json":
		return n.JSON(w)
	}
	return fmt.Errorf("--format %q: want md, html or json", format)
}

// writeNightReport writes the finished night's report beside its journal
// (Markdown and HTML) and returns the HTML's path. A report that cannot be
// built is said, never fatal: the night's work is done either way.
func writeNightReport(b *jobs.Batch, s *supervisor.NightSummary) (string, error) {
	night, err := report.Build(s.Journal, statedir.Cache(b.StateDir))
	if err != nil {
		return "", err
	}
	night.Advise(b)
	dir := statedir.Reports(b.StateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	var md, html bytes.Buffer
	if err := night.Markdown(&md); err != nil {
		return "", err
	}
	if err := night.HTML(&html); err != nil {
		return "", err
	}
	if err := atomicfile.WriteFile(statedir.Report(b.StateDir, s.RunID, ".md"), md.Bytes(), atomicfile.Mode); err != nil {
		return "", err
	}
	htmlPath := statedir.Report(b.StateDir, s.RunID, ".html")
	if err := atomicfile.WriteFile(htmlPath, html.Bytes(), atomicfile.Mode); err != nil {
		return "", err
	}
	return htmlPath, nil
}

// clusterNight is the night of runID (the newest when "") from the
// cluster's shared journal, where every host's events are.
func clusterNight(ctx context.Context, b *jobs.Batch, runID string) (*report.Night, error) {
	dsn, err := clusterdb.DSN(b, lookupEnv)
	if err != nil {
		return nil, err
	}
	db, err := clusterdb.Open(ctx, dsn, b.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (`nightwatch report --local %s` reads this host's journal files)", b.File, err, b.File)
	}
	defer db.Close()
	version, _, err := db.SchemaVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("the cluster's schema: %w", err)
	}
	if version == 0 {
		return nil, fmt.Errorf("%s: the cluster's database has no nightwatch tables yet: no night of batch %s ran over it (`nightwatch report --local %s` reads this host's journal files)",
			b.File, b.Name, b.File)
	}
	if runID == "" {
		if runID, _, err = db.LatestRun(ctx); err != nil {
			return nil, err
		}
		if runID == "" {
			return nil, fmt.Errorf("%s: the cluster's shared journal has no run of batch %s yet", b.File, b.Name)
		}
	}
	events, err := db.RunEvents(ctx, runID)
	if err != nil {
		return nil, err
	}
	if len(events) == 0 {
		runs, _ := db.Runs(ctx)
		if len(runs) > 5 {
			runs = runs[:5]
		}
		known := "it has none"
		if len(runs) > 0 {
			known = "the newest: " + strings.Join(runs, ", ")
		}
		return nil, fmt.Errorf("the cluster's shared journal has no run %s of batch %s (%s)", runID, b.Name, known)
	}
	return report.BuildEvents(events, statedir.Cache(b.StateDir))
}
