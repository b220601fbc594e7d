package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/secrets"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/report"
	"github.com/nightwatch-dev/nightwatch/supervisor"
)

func newReportCmd() *cobra.Command {
	var runID, format, out, stateDir string
	var last bool
	cmd := &cobra.Command{
		Use:   "report [FILE] [--run ID | --last] [--format md|html|json] [-o FILE]",
		Short: "The morning report of a night: jobs, outages, blocked calls, totals",
		Long: `Build the report of a night from its journal and the batch's health cache. FILE is the batch
file (its state_dir holds the journals); without it, --state-dir (default ./.nightwatch).
The newest run is reported unless --run names one. Markdown reads well in a terminal and a chat
message; HTML is one self-contained file with an SVG timeline.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := stateDirOf(args, stateDir)
			if err != nil {
				return err
			}
			var journal string
			if runID != "" && !last {
				journal = statedir.Journal(dir, runID)
			} else {
				j, err := report.LatestJournal(dir)
				if err != nil {
					return err
				}
				journal = j
			}
			night, err := report.Build(journal, statedir.Cache(dir))
			if err != nil {
				return err
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
	cmd.Flags().StringVar(&format, "format", "md", "md, html or json")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&stateDir, "state-dir", ".nightwatch", "the state folder, when no batch file is given")
	return cmd
}

// stateDirOf is the state folder of the batch file in args, or fallback
// when none is given. A batch that does not load exits 2 with its
// problems, like every command that reads one.
func stateDirOf(args []string, fallback string) (string, error) {
	if len(args) == 0 {
		return fallback, nil
	}
	b, err := jobs.LoadWith(args[0], lookupEnv, jobs.LoadOptions{AgentOptional: true})
	secrets.RememberBatch(b)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return "", exitCode(2)
	}
	return b.StateDir, nil
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
