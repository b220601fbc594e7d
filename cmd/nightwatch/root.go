package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/internal/knobs"
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "nightwatch",
		Short: "Keep unattended Claude Code sessions away from dead MCP servers",
		Long: `nightwatch keeps each MCP server's health in a cache outside the model's context,
blocks tool calls to servers that are down, and reconnects them, so that a night of
headless Claude Code sessions still gets its work done when a server dies at 2 a.m.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.AddCommand(newHookCmd(), newWorkerCmd(), newStatusCmd(), newResetCmd(), newProbeCmd(),
		newPreflightCmd(), newRunCmd(), newRerunCmd(), newDaemonCmd(),
		newDoctorCmd(), newInstallCmd(false), newInstallCmd(true), newReportCmd(), newLogsCmd(),
		newExecServerCmd())
	return root
}

// knobFlags are the flags every command that touches the cache shares;
// each overrides its NIGHTWATCH_* variable (and the article's alias).
type knobFlags = knobs.Flags

func addKnobFlags(cmd *cobra.Command, f *knobFlags, hookOnly bool) {
	f.Register(cmd.Flags(), hookOnly)
}

func lookupEnv(name string) (string, bool) { return os.LookupEnv(name) }

func homeDir() string {
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}

// loadKnobs reads the environment, then lays the flags that were given
// over it.
func loadKnobs(cmd *cobra.Command, f *knobFlags) knobs.Knobs {
	home := homeDir()
	k := knobs.FromEnv(lookupEnv, home)
	k.Apply(f, cmd.Flags().Changed, home, lookupEnv)
	return k
}
