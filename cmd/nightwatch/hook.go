package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/hook"
	"github.com/nightwatch-dev/nightwatch/internal/hookexe"
)

func newHookCmd() *cobra.Command {
	var f knobFlags
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Claude Code hook for PreToolUse, PostToolUse and PostToolUseFailure on MCP tools",
		Long: `Register as a command hook in Claude Code's settings (matcher "mcp__.*") for
PreToolUse, PostToolUse and PostToolUseFailure. It reads the event from the payload on stdin.
PreToolUse exits 2 with a deny decision when the server is down; the other events record.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if msg := hookexe.CheckHandoff(lookupEnv); msg != "" {
				fmt.Fprintln(os.Stderr, msg)
			}
			code := hook.Run(cmd.Context(), hook.Env{
				Getenv: lookupEnv, Home: homeDir(),
				Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
				Knobs: loadKnobs(cmd, &f),
			})
			if code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
	addKnobFlags(cmd, &f, true)
	return cmd
}
