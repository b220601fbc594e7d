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
	return &healthcheck.Checker{
		Store:    &healthcheck.Store{Path: k.StatePath.V, Warn: warnStderr},
		Settings: k.Settings(),
		Events:   &healthcheck.EventLog{Path: k.EventsPath.V, Warn: warnStderr},
		Warn:     warnStderr,
	}
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
		Use:   "status",
		Short: "Show each MCP server's health from the cache, with where it is defined",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k := loadKnobs(cmd, &f)
			reportKnobProblems(k)
			c := openChecker(k)
			file, err := c.Store.Read()
			if err != nil {
				warnStderr("nightwatch: " + err.Error())
			}
			now := time.Now()
			rows := operator.Status(file, resolveHere(k), c.Settings, now)
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
		Use:   "reset <server>... | --all | --stuck",
		Short: "Remove servers from the health cache so the next call probes them again",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !all && !stuck {
				return errors.New("name the servers to reset, or give --all or --stuck")
			}
			k := loadKnobs(cmd, &f)
			reportKnobProblems(k)
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
