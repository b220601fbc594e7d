// Package statedir is the one place that knows the layout of a batch's
// state folder: which file holds the health cache, the hooks' events, the
// run journals, each attempt's files, the logs, the reports and the locks.
//
//	<state_dir>/
//	  cache.json                    health cache, shared by the supervisor and every hook
//	  cache.json.lock, .locks/      the cache's locks (healthcheck owns their names)
//	  events.jsonl                  state changes and blocked calls, appended by the hooks
//	  <batch>.lock, <batch>.lock.pid  the batch's run lock and its holder
//	  runs/<run>.jsonl              the run's journal
//	  runs/<run>/<job>/attempt-<n>/ one attempt's MCP config, stream, stderr and final message
//	  runs/<run>/settings+<sum>.json the sessions' settings (hook, deny rules), one file per content
//	  runs/<run>/mcp+<sum>.json     the MCP config of the run's jobs without servers, one per content
//	  runs/<run>/<job>/effects.json the job's side-effect ledger (package effects), and its .lock
//	  logs/<run>.log                the night's log lines
//	  reports/                      morning reports
//	  spool/<run>.<job>.attempt-<n>.json  a cluster worker's attempt end not yet in the database
package statedir

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Cache is the batch's health cache: shared by the supervisor and the
// hooks of every session of the batch, kept apart from the user's own
// ~/.claude/mcp-health-cache.json.
func Cache(root string) string { return filepath.Join(root, "cache.json") }

// Events is where the batch's hooks append blocked calls and state changes.
func Events(root string) string { return filepath.Join(root, "events.jsonl") }

// Runs is the folder of the run journals and the attempts' folders.
func Runs(root string) string { return filepath.Join(root, "runs") }

// JournalExt ends every journal's file name.
const JournalExt = ".jsonl"

// Journal is the journal of one run.
func Journal(root, runID string) string { return filepath.Join(Runs(root), runID+JournalExt) }

// Journals matches every journal of the folder, for filepath.Glob.
func Journals(root string) string { return filepath.Join(Runs(root), "*"+JournalExt) }

// RunID is the run a journal path names.
func RunID(journalPath string) string {
	return strings.TrimSuffix(filepath.Base(journalPath), JournalExt)
}

// Attempt is the folder of one attempt of a job.
func Attempt(root, runID, job string, attempt int) string {
	return filepath.Join(Runs(root), runID, job, fmt.Sprintf("attempt-%d", attempt))
}

// Settings is the settings file of a run's sessions whose content has
// the digest sum: the attempts of one night share it. '+' is in no job's
// name, so it is no job's folder.
func Settings(root, runID, sum string) string {
	return filepath.Join(Runs(root), runID, "settings+"+sum+".json")
}

// MCPConfig is the MCP config, of digest sum, that a run's attempts of
// jobs without servers share: it names no server and holds no secret.
func MCPConfig(root, runID, sum string) string {
	return filepath.Join(Runs(root), runID, "mcp+"+sum+".json")
}

// Effects is the side-effect ledger of a job in a run: the calls its
// attempts made that changed something (package effects).
func Effects(root, runID, job string) string {
	return filepath.Join(Runs(root), runID, job, "effects.json")
}

// AttemptOf reads an attempt folder (Attempt) back: its run, job and
// attempt; ok is false for a path of another shape.
func AttemptOf(dir string) (runID, job string, attempt int, ok bool) {
	dir = filepath.Clean(dir)
	n, err := fmt.Sscanf(filepath.Base(dir), "attempt-%d", &attempt)
	if err != nil || n != 1 || attempt < 1 || fmt.Sprintf("attempt-%d", attempt) != filepath.Base(dir) {
		return "", "", 0, false
	}
	jobDir := filepath.Dir(dir)
	runDir := filepath.Dir(jobDir)
	job, runID = filepath.Base(jobDir), filepath.Base(runDir)
	if filepath.Base(filepath.Dir(runDir)) != "runs" || job == "" || runID == "" {
		return "", "", 0, false
	}
	return runID, job, attempt, true
}

// AttemptFiles matches file in every attempt folder of a run, for
// filepath.Glob.
func AttemptFiles(root, runID, file string) string {
	return filepath.Join(Runs(root), runID, "*", "attempt-*", file)
}

// AttemptSecrets holds the values the session's environment leaves out
// because only servers use them, for the redactor of the session's
// nightwatch processes (secrets.FileVariable).
const AttemptSecrets = "secrets.json"

// The files of an attempt folder.
const (
	AttemptMCPConfig = "mcp.json"
	AttemptStream    = "stream.jsonl"
	AttemptStderr    = "stderr.log"
	// AttemptFinal is the session's final message (the result's text,
	// redacted), for the morning report to link to.
	AttemptFinal = "final.md"
	// AttemptStopping is left by nightwatch before it stops the session:
	// its hooks' failures after that are no evidence about a server
	// (package sessionstop).
	AttemptStopping = "stopping"
)

// Logs is the folder of the nights' log files.
func Logs(root string) string { return filepath.Join(root, "logs") }

// Log is the log file of one run.
func Log(root, runID string) string { return filepath.Join(Logs(root), runID+".log") }

// Reports is the folder of the morning reports.
func Reports(root string) string { return filepath.Join(root, "reports") }

// Lock is the batch's run lock; its holder's pid is in Lock+".pid".
func Lock(root, batch string) string { return filepath.Join(root, batch+".lock") }

// Report is the morning report of one run, ext being ".md" or ".html".
func Report(root, runID, ext string) string { return filepath.Join(Reports(root), runID+ext) }

// Spool is the folder where a cluster worker keeps each attempt's end
// until the cluster's database has it.
func Spool(root string) string { return filepath.Join(root, "spool") }

// SpooledEnd is the spool file of one attempt's end. A run id has no dot,
// so no two attempts share a name.
func SpooledEnd(root, runID, job string, attempt int) string {
	return filepath.Join(Spool(root), fmt.Sprintf("%s.%s.attempt-%d.json", runID, job, attempt))
}

// SpooledEnds matches every spool file, for filepath.Glob.
func SpooledEnds(root string) string { return filepath.Join(Spool(root), "*.attempt-*.json") }
