package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/internal/launch"
	"github.com/nightwatch-dev/nightwatch/internal/serverguard"
)

// newExecServerCmd is the entry the supervisor puts in front of each stdio
// MCP server of a session: it runs the server with only the base
// environment and the named variables (package launch) and keeps it alive
// under Claude Code (package serverguard).
func newExecServerCmd() *cobra.Command {
	var keep string
	var restarts int
	var e serverguard.Entry
	cmd := &cobra.Command{
		Use:    "exec-server [--server NAME] [--keep NAME,…] [--restarts N] [--window D] [--hang-after D | --no-hang-check] [--ping-timeout D] -- COMMAND [ARG…]",
		Short:  "Run an MCP server with the base environment and its own variables only, restarting it when it dies or hangs",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			names, err := launch.ParseKeep(keep)
			if err != nil {
				return err
			}
			switch {
			case restarts < 0:
				return fmt.Errorf("--restarts: %d is below 0", restarts)
			case restarts == 0 && cmd.Flags().Changed("restarts"):
				e.Restarts = -1 // never restarted
			default:
				e.Restarts = restarts
			}
			if e.Window < 0 || e.HangAfter < 0 || e.PingTimeout < 0 {
				return fmt.Errorf("--window, --hang-after and --ping-timeout take a duration above 0")
			}
			e.Keep, e.Argv = names, args
			if e.Server == "" {
				e.Server = args[0]
			}
			os.Exit(serverguard.Serve(e, os.Stderr))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&keep, "keep", "", "comma-separated names of the server's own variables to pass on")
	f.StringVar(&e.Server, "server", "", "the server's name in the session's MCP config")
	f.IntVar(&restarts, "restarts", 0, "restarts within the window before the server is given up (default 5; 0: never restarted)")
	f.DurationVar(&e.Window, "window", 0, "the window --restarts counts in (default 10m)")
	f.DurationVar(&e.HangAfter, "hang-after", 0, "ping the server when a request is outstanding this long (default 60s)")
	f.BoolVar(&e.NoHang, "no-hang-check", false, "never judge the server hung (its calls may run long and answer nothing meanwhile)")
	f.DurationVar(&e.PingTimeout, "ping-timeout", 0, "a ping unanswered this long means the server hangs (default 20s)")
	// Everything after the command belongs to the server, flags included.
	f.SetInterspersed(false)
	return cmd
}
