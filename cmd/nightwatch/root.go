package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
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
type knobFlags struct {
	state, config, log, events                           string
	ttl, backoff, maxBackoff, probeTimeout, reconnectTmo time.Duration
	maxHold                                              time.Duration
	failOpen                                             bool
	failureThreshold                                     int
}

func addKnobFlags(cmd *cobra.Command, f *knobFlags, hookOnly bool) {
	fs := cmd.Flags()
	fs.StringVar(&f.state, "state", "", "health cache file (NIGHTWATCH_STATE_PATH; default ~/.claude/mcp-health-cache.json)")
	fs.StringVar(&f.config, "config", "", "MCP config files to read instead of Claude Code's search, path-list separated (NIGHTWATCH_MCP_CONFIG)")
	fs.DurationVar(&f.ttl, "ttl", 0, "how long a healthy verdict is trusted (NIGHTWATCH_TTL; default 2m)")
	fs.DurationVar(&f.backoff, "backoff", 0, "first wait after a failure, doubling per failure (NIGHTWATCH_BACKOFF; default 30s)")
	fs.DurationVar(&f.maxBackoff, "max-backoff", 0, "cap of the backoff (NIGHTWATCH_MAX_BACKOFF; default 10m)")
	fs.DurationVar(&f.probeTimeout, "probe-timeout", 0, "bound of one probe (NIGHTWATCH_PROBE_TIMEOUT; default 5s)")
	fs.IntVar(&f.failureThreshold, "failure-threshold", 0, "failed calls in a row naming a server or upstream condition (5xx, 429, overloaded, refused, timed out) that open a server (NIGHTWATCH_FAILURE_THRESHOLD; default 3)")
	if hookOnly {
		fs.DurationVar(&f.reconnectTmo, "reconnect-timeout", 0, "bound of one reconnect command (NIGHTWATCH_RECONNECT_TIMEOUT; default 5s)")
		fs.DurationVar(&f.maxHold, "max-hold", 0, "how long a call to a server that is down but being repaired waits for it before it is denied; 0 never holds (NIGHTWATCH_MAX_HOLD; default 2m, at most 5m)")
		fs.BoolVar(&f.failOpen, "fail-open", false, "let calls to unhealthy servers through, saying so each time; for debugging only (NIGHTWATCH_FAIL_OPEN)")
		fs.StringVar(&f.log, "log", "", "append JSON log lines to this file (NIGHTWATCH_LOG)")
		fs.StringVar(&f.events, "events", "", "append one JSON line per blocked call and state change (NIGHTWATCH_EVENTS)")
	}
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
	fs := cmd.Flags()
	path := func(name, v string, dst *knobs.Value[string]) {
		if !fs.Changed(name) {
			return
		}
		p, err := knobs.ExpandPath(v, home, lookupEnv)
		if err != nil {
			k.Problems = append(k.Problems, "--"+name+": "+err.Error())
			return
		}
		dst.Set(p, "--"+name)
	}
	path("state", f.state, &k.StatePath)
	path("log", f.log, &k.LogPath)
	path("events", f.events, &k.EventsPath)
	if fs.Changed("config") {
		k.MCPConfig.Set(f.config, "--config")
	}
	dur := func(name string, v time.Duration, dst *knobs.Value[time.Duration]) {
		if !fs.Changed(name) {
			return
		}
		if v <= 0 {
			k.Problems = append(k.Problems, "--"+name+" must be positive; using "+dst.V.String())
			return
		}
		dst.Set(v, "--"+name)
	}
	dur("ttl", f.ttl, &k.TTL)
	dur("backoff", f.backoff, &k.Backoff)
	dur("max-backoff", f.maxBackoff, &k.MaxBackoff)
	dur("probe-timeout", f.probeTimeout, &k.ProbeTimeout)
	dur("reconnect-timeout", f.reconnectTmo, &k.ReconnectTimeout)
	if fs.Changed("failure-threshold") {
		if f.failureThreshold < 1 {
			k.Problems = append(k.Problems, fmt.Sprintf("--failure-threshold must be at least 1; using %d", k.FailureThreshold.V))
		} else {
			k.FailureThreshold.Set(f.failureThreshold, "--failure-threshold")
		}
	}
	if fs.Changed("max-hold") {
		if f.maxHold < 0 || f.maxHold > healthcheck.MaxMaxHold {
			k.Problems = append(k.Problems, fmt.Sprintf("--max-hold must be between 0 and %s; using %s", healthcheck.MaxMaxHold, k.MaxHold.V))
		} else {
			k.MaxHold.Set(f.maxHold, "--max-hold")
		}
	}
	if fs.Changed("fail-open") {
		k.FailOpen.Set(f.failOpen, "--fail-open")
	}
	return k
}
