package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
	"github.com/nightwatch-dev/nightwatch/operator"
)

// batchArg reports whether an operator command's first argument is a
// batch file (night.yaml): then status, probe and reset work on that
// batch's cache, events file, health settings and servers, as its night
// does, instead of the hook's defaults and Claude Code's search.
func batchArg(args []string) bool {
	if len(args) == 0 {
		return false
	}
	ext := strings.ToLower(filepath.Ext(args[0]))
	if ext != ".yaml" && ext != ".yml" {
		return false
	}
	fi, err := os.Stat(args[0])
	return err == nil && fi.Mode().IsRegular()
}

// withBatch loads the batch file and lays its state folder and health
// settings over k; r lists the batch's servers. reading: the command
// only reads the night's files (jobs.LoadOptions.Reading).
func withBatch(path string, k knobs.Knobs, reading bool) (knobs.Knobs, *mcpconfig.Resolved, *jobs.Batch, error) {
	b, err := jobs.LoadWith(path, lookupEnv, jobs.LoadOptions{AgentOptional: true, Reading: reading})
	if err != nil {
		return k, nil, nil, err
	}
	const src = "the batch file"
	k.StatePath.Set(statedir.Cache(b.StateDir), src)
	k.EventsPath.Set(statedir.Events(b.StateDir), src)
	k.SetSettings(b.Health.Settings(), src)
	if b.Health.ProbeTimeout > 0 {
		k.ProbeTimeout.Set(b.Health.ProbeTimeout, src)
	}
	return k, operator.BatchServers(b), b, nil
}
