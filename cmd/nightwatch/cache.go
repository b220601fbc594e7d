package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/batchlock"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/serversecrets"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/operator"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

func warnStderr(msg string) { fmt.Fprintln(os.Stderr, msg) }

func reportKnobProblems(k knobs.Knobs) {
	for _, p := range k.Problems {
		warnStderr("nightwatch: " + p)
	}
}

func openChecker(k knobs.Knobs) *healthcheck.Checker {
	return healthcheck.New(&healthcheck.Store{Path: k.StatePath.V, Warn: warnStderr}, k.Settings(),
		healthcheck.Options{EventsPath: k.EventsPath.V, Warn: warnStderr})
}

func resolveHere(k knobs.Knobs) *mcpconfig.Resolved {
	cwd, _ := os.Getwd()
	r := mcpconfig.Resolve(k.ConfigOptions(cwd, homeDir(), lookupEnv))
	serversecrets.RememberServers(r)
	for _, p := range r.Problems {
		warnStderr("nightwatch: MCP config " + p.Path + ": " + p.Message)
	}
	return r
}

func newStatusCmd() *cobra.Command {
	var f knobFlags
	var asJSON, watch bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "status [night.yaml] [--watch]",
		Short: "Show the batch's night (from its journal) and each MCP server's health",
		Long: `Show each MCP server's health from the cache, with where it is defined. With a batch file,
the batch's night as its journal tells it (which jobs run and for how long, which wait and why,
what it has spent against max_cost_usd, when it should end), from any terminal and for a night
started by launchd or systemd; then the batch's servers, with what the night saw of them when
that is newer than the cache. --watch prints it again every --interval and ends with the night.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k := loadKnobs(cmd, &f)
			reportKnobProblems(k)
			var resolved *mcpconfig.Resolved
			var b *jobs.Batch
			if len(args) == 1 {
				if !batchArg(args) {
					return fmt.Errorf("%s is not a batch file (night.yaml)", args[0])
				}
				var err error
				if k, resolved, b, err = withBatch(args[0], k, true); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return exitCode(2)
				}
			} else {
				if watch {
					return errors.New("--watch needs the batch file: nightwatch status night.yaml --watch")
				}
				resolved = resolveHere(k)
			}
			c := openChecker(k)
			out := cmd.OutOrStdout()
			clearScreen := watch && isTerminal(os.Stdout)
			for {
				v, err := nightView(b, c, resolved, time.Now())
				if err != nil {
					return err
				}
				if clearScreen {
					fmt.Fprint(out, "\033[H\033[2J")
				}
				if asJSON {
					enc := json.NewEncoder(out)
					enc.SetIndent("", "  ")
					if err := enc.Encode(v.json(k.StatePath.V)); err != nil {
						return err
					}
				} else {
					v.print(out, k.StatePath.V)
				}
				if !watch || v.over() {
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(interval):
				}
				if !clearScreen && !asJSON {
					fmt.Fprintln(out)
				}
			}
		},
	}
	addKnobFlags(cmd, &f, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "print again every --interval until the night ends")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often --watch prints")
	return cmd
}

// statusView is what status prints once: the night (when the batch has
// a run) and the servers.
type statusView struct {
	night   *plan.Live
	holder  int
	journal string
	servers []operator.StatusRow
	now     time.Time
}

// nightView reads the batch's newest night (b nil: none) and the cache.
func nightView(b *jobs.Batch, c *healthcheck.Checker, resolved *mcpconfig.Resolved, now time.Time) (statusView, error) {
	v := statusView{now: now}
	var seen map[string]healthcheck.Sighting
	if b != nil {
		path, err := journal.NewestOf(b.StateDir, b.Name)
		if err != nil {
			return v, err
		}
		if path != "" {
			events, err := journal.Read(path)
			if err != nil {
				return v, err
			}
			lv := plan.LiveNight(b, events, now)
			v.night, v.journal = &lv, path
			v.holder = batchlock.Holder(b.StateDir, b.Name)
			seen = operator.Sightings(events)
		}
	}
	file, err := c.Store.Read()
	if err != nil {
		warnStderr("nightwatch: " + err.Error())
	}
	v.servers = operator.NightStatus(file, resolved, c.Settings, now, seen)
	return v, nil
}

// over says whether a watch has nothing more to show: the night ended,
// or no process runs it.
func (v statusView) over() bool {
	return v.night == nil || !v.night.Ended.IsZero() || v.holder == 0
}

func (v statusView) json(cache string) map[string]any {
	m := map[string]any{"cache": cache, "servers": v.servers}
	if v.night != nil {
		m["night"], m["journal"], m["pid"] = v.night, v.journal, v.holder
	}
	return m
}

func (v statusView) print(w io.Writer, cache string) {
	if v.night != nil {
		operator.PrintNight(w, *v.night, v.holder, v.now)
		fmt.Fprintf(w, "journal: %s\n\n", v.journal)
	}
	fmt.Fprintf(w, "cache: %s\n", cache)
	operator.PrintStatus(w, v.servers, v.now)
}

func newResetCmd() *cobra.Command {
	var f knobFlags
	var all, stuck bool
	cmd := &cobra.Command{
		Use:   "reset [night.yaml] <server>... | --all | --stuck",
		Short: "Remove servers from the health cache so the next call probes them again",
		Long: `Remove servers from the health cache so the next call probes them again. With a batch file
first, the batch's cache.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			k := loadKnobs(cmd, &f)
			reportKnobProblems(k)
			if batchArg(args) {
				var err error
				if k, _, _, err = withBatch(args[0], k, true); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return exitCode(2)
				}
				args = args[1:]
			}
			if len(args) == 0 && !all && !stuck {
				return errors.New("name the servers to reset, or give --all or --stuck")
			}
			removed, err := openChecker(k).Reset(args, all, stuck)
			if err != nil {
				return err
			}
			for _, a := range args {
				if !contains(removed, a) {
					warnStderr(fmt.Sprintf("nightwatch: %s was not in the cache %s", a, k.StatePath.V))
				}
			}
			if len(removed) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to reset")
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "reset: %s\n", strings.Join(removed, ", "))
			return nil
		},
	}
	addKnobFlags(cmd, &f, false)
	cmd.Flags().BoolVar(&all, "all", false, "remove every entry")
	cmd.Flags().BoolVar(&stuck, "stuck", false, "remove entries whose backoff is pinned at its cap")
	return cmd
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
