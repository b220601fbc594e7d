package jobs

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// exposed warns about a layout that puts the night's secrets where its
// sessions run (issue 21): an env_file inside a job's cwd (the README's
// old layout, `env_file: ./config.env` beside the batch and a job without
// cwd), or the state folder inside the cwd of a job that may run shell
// commands. The session's settings deny the model's file tools those
// paths (package session), but a shell command is not a file tool: `cat
// conf*.env` or `env` reads what Read may not. One caution per folder,
// naming its jobs.
func (l *loader) exposed(b *Batch) {
	type where struct {
		cwd  string
		jobs []string
	}
	var envIn, stateIn []*where
	note := func(list []*where, j *Job) []*where {
		for _, w := range list {
			if w.cwd == j.Cwd {
				w.jobs = append(w.jobs, j.Name)
				return list
			}
		}
		return append(list, &where{cwd: j.Cwd, jobs: []string{j.Name}})
	}
	for _, j := range b.Jobs {
		if j == nil || j.Cwd == "" {
			continue
		}
		if b.EnvFile != "" && inside(b.EnvFile, j.Cwd) {
			envIn = note(envIn, j)
		}
		if b.StateDir != "" && inside(b.StateDir, j.Cwd) && runsCommands(b, j) {
			stateIn = note(stateIn, j)
		}
	}
	for _, w := range envIn {
		l.warn(l.envFileLine, "env_file", "%s is inside %s, where %s: nightwatch denies the model's Read and Edit of it, "+
			"but a shell command (cat conf*.env) is no file tool; move it out of the jobs' folders (e.g. ~/.config/nightwatch/%s.env, mode 0600) "+
			"or give the jobs a cwd of their own", b.EnvFile, w.cwd, jobList(w.jobs, "runs", "run"), fileName(b))
	}
	for _, w := range stateIn {
		l.warn(l.stateDirLine, "state_dir", "%s is inside %s, where %s shell commands (Bash): the state folder holds each session's MCP config with "+
			"its servers' keys, and nightwatch's deny rules bind only the model's file tools; set state_dir outside the jobs' folders "+
			"(e.g. ~/.local/state/nightwatch/%s) or give the jobs a cwd of their own", b.StateDir, w.cwd, jobList(w.jobs, "may run", "may run"), fileName(b))
	}
}

// inside says whether path is dir or below it.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// runsCommands says whether job j's sessions may run shell commands: a
// Bash rule in its allowed tools, or an agent.args that skips permissions.
func runsCommands(b *Batch, j *Job) bool {
	if slices.ContainsFunc(j.Allowed(), func(t string) bool { return t == "Bash" || strings.HasPrefix(t, "Bash(") }) {
		return true
	}
	return slices.ContainsFunc(b.Agent.Args, func(a string) bool {
		return a == "--dangerously-skip-permissions" || strings.Contains(a, "bypassPermissions")
	})
}

// jobList names up to three jobs, with the verb for one or for several.
func jobList(names []string, one, several string) string {
	if len(names) == 1 {
		return "job " + names[0] + " " + one
	}
	if len(names) > 3 {
		return fmt.Sprintf("jobs %s and %d more %s", strings.Join(names[:3], ", "), len(names)-3, several)
	}
	return "jobs " + strings.Join(names, ", ") + " " + several
}

// fileName is a file name for the batch's own files elsewhere.
func fileName(b *Batch) string {
	if b.Name != "" {
		return b.Name
	}
	return "night"
}
