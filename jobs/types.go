// Package jobs reads a batch file: the YAML a user writes to describe a
// night of Claude Code sessions. Decoding is strict (unknown keys are
// errors) and every error names the file, the line and the field, before
// anything runs.
package jobs

import (
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/launch"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// OnUnhealthy says what happens to a job whose servers are down when it is
// due.
type OnUnhealthy string

const (
	Defer OnUnhealthy = "defer" // wait until its servers are healthy again
	Skip  OnUnhealthy = "skip"  // skip it, with the reason
	Run   OnUnhealthy = "run"   // run anyway; the hook still blocks dead servers
)

// SideEffects says whether a later attempt of a job may repeat a call
// that an earlier attempt already made successfully to a tool that is not
// read-only (package effects).
type SideEffects string

const (
	// Once: an exact repeat is refused, and the attempt is told why.
	Once SideEffects = "once"
	// AllowRepeat: the calls are still kept and told, not refused.
	AllowRepeat SideEffects = "allow-repeat"
)

// HookTransport is how a session's Claude Code reaches nightwatch's hook.
type HookTransport string

const (
	// HookAuto: the night serves the hook over loopback HTTP when the
	// agent's CLI honours onFailure "block" on an http hook (2.1.332 and
	// later) and no allowedHttpHookUrls setting may refuse its URL; else
	// the command hook.
	HookAuto HookTransport = "auto"
	// HookCommand: a hook process per call, whatever the CLI.
	HookCommand HookTransport = "command"
	// HookHTTP: the served hook when the CLI can use it safely; the night
	// says why when it cannot, and uses the command hook.
	HookHTTP HookTransport = "http"
)

// Batch is a loaded, validated batch file. Every path in it is absolute,
// every ${VAR} resolved, every default applied.
type Batch struct {
	// File is the absolute path of the batch file; Dir its folder.
	File string
	Dir  string

	Version     int
	Name        string
	Schedule    string            // robfig/cron syntax; "" when not scheduled
	Deadline    *ClockTime        // no job starts after it (local time), nil = none
	MaxParallel int               // ≥ 1
	MaxCostUSD  float64           // 0 = no limit
	StateDir    string            // absolute
	EnvFile     string            // absolute, "" = none
	EnvFileKeys []string          // the variables env_file sets, in file order (their values are in Env unless env overrides them)
	Env         map[string]string // env_file then env, expanded
	FailOpen    bool              // the batch asks the hook to fail open (debugging only)
	// HookTransport is how the sessions reach nightwatch's hook
	// (hook_transport, default auto).
	HookTransport HookTransport
	// SessionEnv are the server variables (Server.Vars) every job's
	// session keeps for its own tools (session_env); a job's own list
	// replaces it.
	SessionEnv []string
	// APIRetries is the sessions' CLAUDE_CODE_MAX_RETRIES (api_retries,
	// default 2) unless the environment sets it.
	APIRetries int
	// Resume: a retry after real work resumes the same Claude session
	// (resume, default true).
	Resume bool
	// KeepAwake: the machine is kept awake while the night runs
	// (keep_awake, default true).
	KeepAwake bool
	// API are the night's waits on the model's API (api:); zero fields
	// take the supervisor's defaults.
	API      APIWaits
	Agent    Agent
	Defaults JobDefaults
	Health   Health
	// Servers are the MCP servers, in file order, nightwatch's own fields
	// split from what goes into the session's MCP config.
	Servers []*Server
	Jobs    []*Job
	// Notify says how to tell the operator the night ended.
	Notify Notify
	// Cluster is the cluster: section: the night runs over several hosts
	// on a shared Postgres; nil: on this host alone, with local files.
	Cluster *Cluster
	// Warnings are problems a LoadWith option let through.
	Warnings []string
	// Cautions are mistakes that do not stop a night (a secret written in
	// the batch file, an env_file other users can read, a reconnect
	// command in shell syntax), each with its file, line and fix; preflight,
	// run and doctor say them.
	Cautions []string
}

// Cluster is the batch's cluster: section. The connection string itself
// is never in the batch file: DatabaseEnv names the variable that holds it,
// set in the environment or in env_file.
type Cluster struct {
	// DatabaseEnv is the variable with the Postgres connection string
	// (database_env, default NIGHTWATCH_DATABASE_URL).
	DatabaseEnv string
	// RescueAfter is how long a running attempt may go without its worker
	// before River rescues it and the night counts it as a crash
	// (rescue_after; default: the longest job timeout plus 5 minutes). It
	// must be longer than every job's timeout, or a live attempt would be
	// rescued.
	RescueAfter time.Duration
	// Line is where the section starts, for messages.
	Line int
}

// DefaultDatabaseEnv is the variable of the cluster's connection string.
const DefaultDatabaseEnv = "NIGHTWATCH_DATABASE_URL"

// Notify is where the night's summary goes when it ends: a webhook (a
// JSON body with a Slack-compatible "text" field) and/or a command (argv,
// no shell) that gets the summary on stdin.
type Notify struct {
	Webhook string
	Command []string
}

// ClockTime is a local time of day, "07:00".
type ClockTime struct{ Hour, Minute int }

// Agent is the program each session runs (Claude Code).
type Agent struct {
	Command string   // absolute path, resolved when the file is loaded
	Args    []string // extra arguments for every session
}

// JobDefaults apply to every job that does not set its own.
type JobDefaults struct {
	Timeout      time.Duration
	StallTimeout time.Duration
	Retries      int
	OnUnhealthy  OnUnhealthy
	// MCPTimeout is how long Claude Code waits for an MCP server to
	// connect (its MCP_TIMEOUT), default 30 s.
	MCPTimeout time.Duration
	// Verify is every job's check unless it sets its own.
	Verify *Verify
	// SideEffects: whether a retry may repeat a call that already
	// succeeded (default once).
	SideEffects SideEffects
	// MaxCostUSD and MaxTurns are a job's own budget (0: none): its
	// session is stopped once it has cost or taken more, and the job is
	// not retried.
	MaxCostUSD float64
	MaxTurns   int
	// MaxDefer is how long a job may wait for its servers once nothing
	// else can run, before it is skipped with the reason (default 1h).
	MaxDefer time.Duration
}

// Health tunes the health layer for this batch.
type Health struct {
	TTL            time.Duration
	Backoff        time.Duration
	MaxBackoff     time.Duration
	ProbeTimeout   time.Duration
	PrewarmTimeout time.Duration
	// ReconnectTimeout bounds one reconnect command, in the night's
	// maintenance and in the hooks of its sessions alike.
	ReconnectTimeout time.Duration
	// FailureThreshold is how many failed calls in a row that name a
	// server or upstream condition open a server (passive health).
	FailureThreshold int
	// MaxHold is how long a session's hook holds a call to a server that
	// is down but being repaired before it denies it (max_hold, default
	// 2m, at most 5m; 0 never holds). A server's own max_hold overrides it.
	MaxHold time.Duration
	// MaxHoldSet says the batch wrote max_hold: a stall_timeout it could
	// outlast is then an error; the default gives way to a short one.
	MaxHoldSet bool
}

// Server is one MCP server of the batch.
type Server struct {
	Name string
	// MCP is the definition as a session gets it: transport fields only,
	// variables resolved, paths absolute (Raw holds the entry to write,
	// with nightwatch's own fields removed).
	MCP mcpconfig.Server
	// RequiresEnv are variables that must be set (and non-empty) before
	// anything runs; each is passed in the server's env.
	RequiresEnv []string
	// Reconnect is the reconnect command line (run without a shell).
	Reconnect string
	// MaxHold is the server's own max_hold; nil: the batch's.
	MaxHold *time.Duration
	// Vars are the variables the server's definition references: every
	// ${VAR} in the fields that go into the session's MCP config (command,
	// args, env, url, headers, headersHelper, oauth) and every name of
	// requires_env, sorted. Not the reconnect command's: the hook runs
	// that in the session's environment.
	Vars []string
	// Restart are a stdio server's restart and hang bounds (its restart:
	// block), for its exec-server; zero fields take the defaults.
	Restart launch.Bounds
	// Line is where the server is defined, for messages.
	Line int
}

// Job is one Claude Code session of the night.
type Job struct {
	Name         string
	Prompt       string // the prompt text (prompt_file already read)
	PromptFile   string // absolute, "" when the prompt is inline
	Servers      []string
	Cwd          string // absolute
	Needs        []string
	Timeout      time.Duration
	StallTimeout time.Duration
	Retries      int
	OnUnhealthy  OnUnhealthy
	// MaxCostUSD and MaxTurns are the job's budget (0: none), its own or
	// the defaults': an attempt that spends more is stopped, and the job
	// fails as "budget exceeded", not retried.
	MaxCostUSD float64
	MaxTurns   int
	// MCPTimeout becomes the session's MCP_TIMEOUT: how long Claude Code
	// waits for the job's servers to connect.
	MCPTimeout time.Duration
	// AllowedTools are the job's own allowed_tools; AllowedToolsSet says
	// the job wrote the field (an empty list then allows nothing). Allowed
	// is what the session gets.
	AllowedTools    []string
	AllowedToolsSet bool
	// Verify is the check run after a success result; nil: none.
	Verify *Verify
	// SideEffects: whether a retry may repeat a call that already
	// succeeded.
	SideEffects SideEffects
	// SessionEnv names variables a server uses (Server.Vars) that the
	// job's session keeps in its own environment, for its own tools
	// (session_env: a GITHUB_TOKEN both `gh` in Bash and a GitHub server
	// need). Every other variable a server uses is left out of the
	// session's environment; the servers get theirs from the MCP config.
	SessionEnv []string
	// Hosts pins the job to the cluster's workers that carry one of these
	// labels (a worker's labels are its host name and its --label flags);
	// empty: any worker. Only with a cluster: section.
	Hosts []string
	Line  int
}

// Verify is a job's check of its own work: a command (argv, no shell) run
// in the job's cwd after the session reported success. A non-zero exit
// makes the attempt failed.
type Verify struct {
	Command []string      // the program (absolute) and its arguments
	Timeout time.Duration // > 0
	Line    int
}

// APIWaits are the batch's api: block: how long the night waits on the
// model's API. A zero field is not set (the default holds).
type APIWaits struct {
	// CheckInterval is the first interval between checks of an API that
	// stopped answering (check_interval, default 15s); it doubles up to
	// MaxCheckInterval (max_check_interval, default 30s).
	CheckInterval, MaxCheckInterval time.Duration
	// MaxWait is how long the night waits for the API before it skips the
	// rest (max_wait, default 6h; the deadline may end it sooner).
	MaxWait time.Duration
	// PauseWithoutReset is the pause on a usage limit that gave no reset
	// time (pause_without_reset, default 30m).
	PauseWithoutReset time.Duration
	// RateLimitPause is the first pause after a rate limit
	// (rate_limit_pause, default 1m); it doubles up to MaxRateLimitPause
	// (max_rate_limit_pause, default 15m).
	RateLimitPause, MaxRateLimitPause time.Duration
}
