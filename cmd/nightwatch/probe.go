package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/operator"
	"github.com/nightwatch-dev/nightwatch/session"
)

func newProbeCmd() *cobra.Command {
	var f knobFlags
	var asJSON, noRecord bool
	cmd := &cobra.Command{
		Use:   "probe [night.yaml] [server...]",
		Short: "Probe MCP servers now with a real handshake, print a table and update the cache",
		Long: `Probe every configured MCP server (or the named ones) with a real MCP handshake and
tools/list, print server, transport, verdict, latency, tool count and reason, and record the
verdicts in the health cache. Servers come from Claude Code's search from the current folder,
or from --config files; with a batch file first, the batch's servers, probed as its sessions
start them (its env and folder), with its cache. Exit 0 when every server is reachable, 1 otherwise.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			k := loadKnobs(cmd, &f)
			reportKnobProblems(k)
			cwd, _ := os.Getwd()
			var r *mcpconfig.Resolved
			var environ []string
			if batchArg(args) {
				var b *jobs.Batch
				var err error
				if k, r, b, err = withBatch(args[0], k, false); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return exitCode(2)
				}
				args, cwd, environ = args[1:], b.Dir, session.Environ(b, os.Environ())
			} else {
				r = resolveHere(k)
			}
			if k.MCPConfig.V != "" && len(r.Problems) > 0 {
				return fmt.Errorf("cannot read the MCP config given by %s", k.MCPConfig.Source)
			}
			var servers []*mcpconfig.Server
			if len(args) == 0 {
				for _, n := range r.Names {
					servers = append(servers, r.Servers[n])
				}
			}
			for _, a := range args {
				srv := r.Lookup(a)
				if srv == nil {
					return fmt.Errorf("no MCP server named %q in %v", a, r.Searched)
				}
				servers = append(servers, srv)
			}
			if len(servers) == 0 {
				return fmt.Errorf("no MCP servers found (looked in %v)", r.Searched)
			}
			sort.Slice(servers, func(i, j int) bool { return servers[i].Name < servers[j].Name })
			for _, s := range servers {
				if len(s.Missing) > 0 {
					warnStderr(fmt.Sprintf("nightwatch: %s uses unset variables: %v", s.Name, s.Missing))
				}
			}
			c := openChecker(k)
			record := func(srv *mcpconfig.Server, res probe.Result) { c.RecordProbe(srv, res, healthcheck.ByProbe) }
			if noRecord {
				record = nil
			}
			rows := operator.ProbeAll(cmd.Context(), servers,
				probe.Options{Timeout: k.ProbeTimeout.V, ListTools: true, Cwd: cwd, Environ: environ}, record)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(rows); err != nil {
					return err
				}
			} else {
				operator.PrintProbe(cmd.OutOrStdout(), rows)
			}
			// rows and servers are both in name order. One reachability
			// rule: a 401 to a probe that sent the server's own token fails.
			for i, row := range rows {
				if !healthcheck.Reachable(servers[i], row.Result) {
					return exitCode(1)
				}
			}
			return nil
		},
	}
	addKnobFlags(cmd, &f, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noRecord, "no-record", false, "do not write the verdicts to the cache")
	return cmd
}
