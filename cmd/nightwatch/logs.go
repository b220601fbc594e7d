package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/supervisor"
)

func newLogsCmd() *cobra.Command {
	var follow bool
	var stateDir string
	cmd := &cobra.Command{
		Use:   "logs [FILE] [--follow]",
		Short: "Show the log of the current (newest) run of a batch",
		Long: `Print the newest run's log from the batch's state_dir/logs (FILE is the batch file; without
it, --state-dir). On a terminal the JSON lines are shown as readable lines. --follow keeps
printing new lines until the night ends (its journal closes the run, or no process runs it any
more), or until interrupted.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := stateDirOf(args, stateDir)
			if err != nil {
				return err
			}
			logs, _ := filepath.Glob(statedir.Log(dir, "*"))
			if len(logs) == 0 {
				return fmt.Errorf("no run logs in %s", statedir.Logs(dir))
			}
			// Run IDs start with their start time: the last name is the newest run.
			sort.Strings(logs)
			// Never wait on a FIFO planted where the log should be.
			f, err := atomicfile.OpenRegular(logs[len(logs)-1])
			if err != nil {
				return err
			}
			defer f.Close()
			var out io.Writer = cmd.OutOrStdout()
			if isTerminal(os.Stdout) {
				out = zerolog.ConsoleWriter{Out: os.Stdout, TimeFormat: "15:04:05"}
			}
			runID := strings.TrimSuffix(filepath.Base(logs[len(logs)-1]), ".log")
			var endedWhy string
			r := bufio.NewReader(f)
			for {
				line, err := r.ReadBytes('\n')
				if len(line) > 0 && line[len(line)-1] == '\n' {
					_, _ = out.Write(line)
				} else if len(line) > 0 {
					// A line still being written: read it whole next time.
					_, _ = f.Seek(-int64(len(line)), io.SeekCurrent)
					r.Reset(f)
				}
				if err == nil {
					continue
				}
				if err != io.EOF || !follow {
					return nil
				}
				if endedWhy != "" {
					// Everything the night wrote before it ended is out.
					fmt.Fprintf(os.Stderr, "nightwatch: %s\n", endedWhy)
					return nil
				}
				if over, why := supervisor.NightOver(dir, runID); over {
					// One more read: lines written just before the end.
					endedWhy = why
					continue
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(300 * time.Millisecond):
				}
			}
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines")
	cmd.Flags().StringVar(&stateDir, "state-dir", ".nightwatch", "the state folder, when no batch file is given")
	return cmd
}
