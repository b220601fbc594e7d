package main

import (
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
	var e serverguard.Entry
	cmd := &cobra.Command{
		Use:    "exec-server [--server NAME] [--keep NAME,…] -- COMMAND [ARG…]",
		Short:  "Run an MCP server with the base environment and its own variables only, restarting it when it dies or hangs",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			names, err := launch.ParseKeep(keep)
			if err != nil {
				return err
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
	f.IntVar(&e.Restarts, "restarts", 0, "restarts within 10 minutes before the server is given up (0: 5)")
	f.DurationVar(&e.HangAfter, "hang-after", 0, "ping the server when a request is outstanding this long (0: 60s)")
	f.DurationVar(&e.PingTimeout, "ping-timeout", 0, "a ping unanswered this long means the server hangs (0: 20s)")
	// Everything after the command belongs to the server, flags included.
	f.SetInterspersed(false)
	return cmd
}
