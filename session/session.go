// Package session runs one `claude -p` attempt of a job: it prepares the
// attempt's files (settings with nightwatch's hook, the job's MCP config),
// builds the command and its environment, runs it in its own process
// group with a wall-clock and a stall limit, reads the stream-json output
// as it arrives, and judges what happened (Outcome). It decides nothing
// about the job's fate: the night's plan does that from the Outcome.
package session

import (
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/cluster/peers"
	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/internal/batchsecrets"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/secrets"
	"github.com/nightwatch-dev/nightwatch/internal/sessionstop"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/reconnect"
)

// grace is how long a session gets between SIGTERM to Claude and
// SIGKILL. Claude Code uses it to close its MCP servers.
const grace = 5 * time.Second

// promptArgMax is the longest prompt passed as an argument. Linux refuses
// any single argument over 128 KiB (MAX_ARG_STRLEN) with E2BIG; longer
// prompts go through stdin, which `claude -p` reads when no prompt
// argument is given.
const promptArgMax = 100 << 10

// Spec is everything one attempt of one job needs.
type Spec struct {
	Batch   *jobs.Batch
	Job     *jobs.Job
	RunID   string
	Attempt int    // 1-based
	Binary  string // absolute path of the nightwatch binary whose hook is injected
	Env     []string
	// Feedback is told the model after the job's prompt: what the last
	// attempt's verify said. "" for none.
	Feedback string
	// Resume is the Claude session id this attempt continues (--resume),
	// and ResumeWhy how the last attempt ended; "" starts a fresh session.
	Resume, ResumeWhy string
	// PeersSocket is the cluster's claims socket on this host (a worker's
	// health relay), handed to the session's hooks in PeersSocketEnv so
	// that a probe or a trial holds across hosts; "" on one host.
	PeersSocket string
	// DieWithParent: the session dies with the process that started it (a
	// cluster's worker, whose death River answers by running the attempt
	// elsewhere: a session left behind would do the job twice).
	DieWithParent bool
	// Ready, when set, is asked once the session's logs are open, just
	// before the agent is spawned: it may wait, and false spawns nothing
	// (the session ends KilledStopped, "not started"). The night answers
	// once the attempt's job-started line is durable, so the opening of
	// the logs overlaps the journal's fsync.
	Ready func() bool
	// HTTPHook, when set, registers the night's served hook (hook/served)
	// as an http hook instead of the command hook: for a CLI that honours
	// onFailure "block" on it (2.1.332 and later; the night decides).
	HTTPHook *HTTPHook
}

// HTTPHook is where the night serves a session's hook.
type HTTPHook struct {
	URL string
	// TokenHeader and Token authenticate the CLI's requests. The token is
	// a secret: written only into the attempt's owner-only settings file.
	TokenHeader, Token string
}

// PeersSocketEnv is the variable that tells a session's hooks where the
// cluster's claims socket is. A path, never a secret.
const PeersSocketEnv = peers.SocketEnv

// prompt is the attempt's prompt: the job's, then the feedback. A resumed
// session has the job's prompt already: it is told what happened and to
// go on.
func (s Spec) prompt() string {
	if s.Resume != "" {
		p := "nightwatch: the previous attempt of this job ended before it finished"
		if s.ResumeWhy != "" {
			p += " (" + s.ResumeWhy + ")"
		}
		p += ". Continue the task from where it stopped; do not redo work that is already done."
		if s.Feedback != "" {
			p += "\n\n" + redact.String(s.Feedback)
		}
		return p
	}
	if s.Feedback == "" {
		return s.Job.Prompt
	}
	// The feedback is a verify command's output: outside text, redacted
	// before the model (and the command line) sees it.
	return s.Job.Prompt + "\n\n" + redact.String(s.Feedback)
}

// Files are the paths of one attempt. Dir, Settings, MCPConfig,
// Stream and Stderr belong to the attempt; Cache and Events are shared by
// every session of the batch (the hook writes them).
type Files struct {
	Dir, Settings, MCPConfig, Stream, Stderr, Events, Cache string
	// SharedMCPConfig says MCPConfig is the run's, not the attempt's (a
	// job without servers): it holds no secret and stays when the
	// session ends.
	SharedMCPConfig bool
}

// The attempt's status in Outcome.Status.
const (
	Done   = "done"
	Failed = "failed"
)

// Environ is the environment of a session (and so of its hook and its
// stdio servers): base (the supervisor's own), then the batch's env_file
// and env, minus the fail-open variables unless the batch asks for fail
// open (a debugging switch left in a shell profile must not let a night
// call dead servers), plus MCP_CONNECTION_NONBLOCKING=0 unless set, so the
// first turn waits for the servers instead of starting without their
// tools (reference §2.4).
func Environ(b *jobs.Batch, base []string) []string {
	var keys []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	for _, kv := range base {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			set(k, v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b.Env)) {
		set(k, b.Env[k])
	}
	if b.Cluster != nil {
		// The cluster's connection string is the supervisor's and the
		// workers' alone: never the model's, a hook's or a server's.
		delete(vals, b.Cluster.DatabaseEnv)
	}
	if !b.FailOpen {
		for _, k := range knobs.EnvFailOpen {
			delete(vals, k)
		}
	}
	if _, ok := vals["MCP_CONNECTION_NONBLOCKING"]; !ok {
		set("MCP_CONNECTION_NONBLOCKING", "0")
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if v, ok := vals[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// connectWait bounds how long Claude Code's first turn waits for the MCP
// servers to connect (with MCP_CONNECTION_NONBLOCKING=0), in ms.
const connectWait = "MCP_CONNECT_TIMEOUT_MS"

// positiveInteger says whether s is a whole number above zero, as Claude
// Code reads a timeout in ms.
func positiveInteger(s string) bool {
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n > 0
}

// disableMCPTasks turns the MCP tasks extension off in Claude Code
// 2.1.304 and later.
const disableMCPTasks = "CLAUDE_CODE_DISABLE_MCP_TASKS"

// reconnectVariable starts the per-server variable the hook reads its
// reconnect command from (reconnect.CommandFor's first candidate).
const reconnectVariable = "NIGHTWATCH_RECONNECT_"

// commandEnviron is the environment of the attempt's `claude -p`: the
// batch's (Environ), then what only this job sets. MCP_TIMEOUT (in ms) is
// the job's mcp_timeout. Each of the job's servers with a batch reconnect
// command gets it as NIGHTWATCH_RECONNECT_<SERVER>, which the hook reads,
// so that a call blocked inside the session reconnects at once instead of
// waiting for the supervisor's maintenance; the command goes by the
// environment, never by a command line. f.Dir is the attempt's folder.
// The variables only the batch's servers use are left out (serverOnly).
func commandEnviron(spec Spec, f Files) []string {
	dir := f.Dir
	env := Environ(spec.Batch, spec.Env)
	// What only the servers use stays out of the CLI's environment: the
	// MCP config carries it to them (issue 21).
	left := serverOnly(spec.Batch, spec.Job, env)
	env = withoutNames(env, left)
	over := map[string]string{}
	// Their values, for the redactor of the session's hook and
	// exec-servers: a path, never a value (Prepare writes the file).
	if dir != "" && len(left) > 0 {
		over[secrets.FileVariable] = filepath.Join(dir, statedir.AttemptSecrets)
	}
	// The CLI's own retries of a failing API stay short: the night waits
	// out outages and limits without burning the job's attempts.
	if _, set := environ.Lookup(env)("CLAUDE_CODE_MAX_RETRIES"); !set {
		over["CLAUDE_CODE_MAX_RETRIES"] = strconv.Itoa(spec.Batch.APIRetries)
	}
	if t := spec.Job.MCPTimeout; t > 0 {
		over["MCP_TIMEOUT"] = strconv.FormatInt(t.Milliseconds(), 10)
	}
	// The first turn waits for the servers as long as each may take to
	// connect. Claude Code 2.1.197 waits (MCP_CONNECTION_NONBLOCKING=0)
	// only MCP_CONNECT_TIMEOUT_MS, 5 s by default, then starts without
	// the tools of a server still connecting, and the night would take a
	// server slower than that to start for one the session cannot use;
	// 2.1.332 waits up to the per-server MCP_TIMEOUT (30 s by default).
	if _, set := environ.Lookup(env)(connectWait); !set {
		wait := strconv.FormatInt(jobs.DefaultMCPTimeout.Milliseconds(), 10)
		if v, ok := over["MCP_TIMEOUT"]; ok {
			wait = v
		} else if v, ok := environ.Lookup(env)("MCP_TIMEOUT"); ok && positiveInteger(v) {
			wait = v
		}
		over[connectWait] = wait
	}
	// No call of a `claude -p` session becomes an MCP task (reference
	// in-flight §2): without the variable a CLI whose tasks gate is on
	// still advertises the extension, and a server that answers with a
	// task anyway runs it orphaned. The batch or the job may set it.
	if _, set := environ.Lookup(env)(disableMCPTasks); !set {
		over[disableMCPTasks] = "1"
	}
	// The hooks keep the job's side-effect ledger (package effects): the
	// file and which attempt this is.
	if spec.RunID != "" && spec.Job.Name != "" && spec.Attempt > 0 {
		over[effects.PathEnv] = statedir.Effects(spec.Batch.StateDir, spec.RunID, spec.Job.Name)
		over[effects.AttemptEnv] = strconv.Itoa(spec.Attempt)
	}
	// The hook remembers env_file's values by their names (issue 12).
	if names := batchsecrets.EnvFileNames(spec.Batch); names != "" {
		over[secrets.NamesVariable] = names
	}
	if spec.PeersSocket != "" {
		over[PeersSocketEnv] = spec.PeersSocket
	}
	// The hooks learn where a stop is announced and who owns the session
	// (package sessionstop): a stop nightwatch caused is no evidence
	// about a server.
	if dir != "" {
		maps.Copy(over, sessionstop.Vars(dir))
		// exec-server, which guards each stdio server (package
		// serverguard), writes its starts, restarts and losses to the
		// night's events file, as the hook does.
		over[knobs.EnvEvents[0]] = statedir.Events(spec.Batch.StateDir)
		// The hook reads the attempt's MCP config by this variable, not by
		// a flag: the settings that register it are the same for every
		// attempt (Prepare). It overrides one the supervisor inherited.
		over[knobs.EnvMCPConfig[0]] = f.MCPConfig
	}
	for _, srv := range spec.Batch.ServersOf(spec.Job) {
		// A server's own hold bound travels like its reconnect command.
		if key := reconnect.EnvKey(srv.Name); key != "" && srv.MaxHold != nil {
			over[knobs.EnvMaxHoldPrefix+key] = srv.MaxHold.String()
		}
		if srv.Reconnect == "" {
			continue
		}
		// A server whose key is COMMAND (or empty) would set the variable
		// of every server; the hook then finds no command of its own for
		// it, and the supervisor's maintenance still reconnects it.
		if key := reconnect.EnvKey(srv.Name); key != "" && key != "COMMAND" {
			over[reconnectVariable+key] = srv.Reconnect
		}
	}
	return environ.Overlay(env, over)
}
