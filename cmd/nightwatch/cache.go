package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/secrets"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/operator"
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
	secrets.RememberServers(r)
	for _, p := range r.Problems {
		warnStderr("nightwatch: MCP config " + p.Path + ": " + p.Message)
	}
	return r
}

func newStatusCmd() *cobra.Command {
	var f knobFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [night.yaml]",
		Short: "Show each MCP server's health from the cache, with where it is defined",
		Long: `Show each MCP server's health from the cache, with where it is defined. With a batch file,
the batch's cache and servers, as its night sees them.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k := loadKnobs(cmd, &f)
			reportKnobProblems(k)
			var resolved *mcpconfig.Resolved
			if len(args) == 1 {
				if !batchArg(args) {
					return fmt.Errorf("%s is not a batch file (night.yaml)", args[0])
				}
				var err error
				if k, resolved, _, err = withBatch(args[0], k); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return exitCode(2)
				}
			} else {
				resolved = resolveHere(k)
			}
			c := openChecker(k)
			file, err := c.Store.Read()
			if err != nil {
				warnStderr("nightwatch: " + err.Error())
			}
			now := time.Now()
			rows := operator.Status(file, resolved, c.Settings, now)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"cache": k.StatePath.V, "servers": rows})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cache: %s\n", k.StatePath.V)
			operator.PrintStatus(cmd.OutOrStdout(), rows, now)
			return nil
		},
	}
	addKnobFlags(cmd, &f, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
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
				if k, _, _, err = withBatch(args[0], k); err != nil {
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
