package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
)

const cacheTitle = "health cache"

// Disk thresholds below which a cache write may fail. The Node hook
// swallowed write errors: a full disk meant a probe on every call.
const (
	minFreeBytes   = 100 << 20
	minFreePercent = 2
)

// cache checks the cache the hooks will write: the batch's, else the
// user's (NIGHTWATCH_STATE_PATH or ~/.claude/mcp-health-cache.json).
func (e *env) cache(context.Context) []Check {
	path, settings := e.knobs.StatePath.V, e.knobs.Settings()
	resetCmd := "nightwatch reset"
	if e.batch != nil {
		path = statedir.Cache(e.batch.StateDir)
		settings = e.batch.Health.Settings()
		resetCmd = "nightwatch reset --state " + path
	}
	var out []Check
	add := func(l Level, detail, fix string) {
		out = append(out, Check{ID: "cache", Title: cacheTitle, Level: l, Detail: detail, Fix: fix})
	}

	// Writes are a temp file renamed into place, so the folder must take
	// new files. A folder not made yet is created on first write: test the
	// nearest one that exists.
	dir := existingAncestor(filepath.Dir(path))
	if err := tryCreate(dir); err != nil {
		add(Fail, fmt.Sprintf("%s cannot be written: %v", path, err),
			fmt.Sprintf("make %s a writable folder, or set NIGHTWATCH_STATE_PATH (or the batch's state_dir) to a writable place", filepath.Dir(path)))
	}
	if fi, err := os.Stat(path); err == nil {
		if perm := fi.Mode().Perm(); perm != 0o600 {
			add(Warn, fmt.Sprintf("%s has mode %04o: other users can read which servers failed and why", path, perm), "chmod 600 "+path)
		}
	}
	// Nothing to read when there is no file (or the write check already
	// said why there cannot be one).
	f, err := &healthcheck.File{}, error(nil)
	if _, statErr := os.Stat(path); statErr == nil {
		f, err = (&healthcheck.Store{Path: path}).Read()
	}
	switch {
	case errors.Is(err, healthcheck.ErrCorrupt):
		add(Fail, fmt.Sprintf("%s is corrupt: %v", path, err),
			fmt.Sprintf("%s --all   # or move it aside: mv %s %s.bad", resetCmd, path, path))
	case err != nil:
		add(Fail, err.Error(), "make "+path+" a readable regular file, or remove it")
	default:
		var stuck []string
		for name, entry := range f.Servers {
			if settings.Stuck(entry) {
				stuck = append(stuck, name)
			}
		}
		slices.Sort(stuck)
		for _, name := range stuck {
			add(Warn, fmt.Sprintf("server %q is stuck: unhealthy after %d failures, backoff pinned at %s, so recovery is seen only that often",
				name, f.Servers[name].FailureCount, settings.MaxBackoff), resetCmd+" --stuck")
		}
	}
	if free, total, err := diskFree(dir); err == nil && total > 0 {
		if free < minFreeBytes || free*100 < total*minFreePercent {
			add(Warn, fmt.Sprintf("the disk of %s has %d MiB free (%.1f%%): cache writes may fail", path, free>>20, 100*float64(free)/float64(total)),
				"free space on that disk (df -h "+dir+"), or move the cache with NIGHTWATCH_STATE_PATH")
		}
	}
	if len(out) == 0 {
		detail := path + " is writable, private and readable"
		if _, err := os.Stat(path); err != nil {
			detail = path + " does not exist yet; its folder takes new files"
		}
		out = append(out, ok("cache", cacheTitle, detail))
	}
	return out
}

// existingAncestor walks up to the first path that exists (it may be a
// file: then nothing below it can be created, and tryCreate says so).
func existingAncestor(dir string) string {
	for {
		if _, err := os.Lstat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// tryCreate creates and removes a temp file in dir. Permission bits alone
// say little (root ignores them); only a real write is proof.
func tryCreate(dir string) error {
	f, err := os.CreateTemp(dir, ".nightwatch-doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
