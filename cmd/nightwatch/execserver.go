package main

import (
	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/internal/launch"
)

// newExecServerCmd is the entry the supervisor puts in front of each stdio
// MCP server of a session: it becomes the server with only the base
// environment and the named variables (package launch).
func newExecServerCmd() *cobra.Command {
	var keep string
	cmd := &cobra.Command{
		Use:    "exec-server [--keep NAME,…] -- COMMAND [ARG…]",
		Short:  "Run an MCP server with the base environment and its own variables only",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			names, err := launch.ParseKeep(keep)
			if err != nil {
				return err
			}
			return launch.Exec(args, names)
		},
	}
	cmd.Flags().StringVar(&keep, "keep", "", "comma-separated names of the server's own variables to pass on")
	// Everything after the command belongs to the server, flags included.
	cmd.Flags().SetInterspersed(false)
	return cmd
}
