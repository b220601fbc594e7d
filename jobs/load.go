package jobs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// Limits on what Load reads. A batch file or env_file is a few KB; the caps
// keep a wrong path (/dev/zero, a log file) from eating the machine.
const (
	maxBatchBytes = 4 << 20
	maxEnvBytes   = 1 << 20
	// maxPromptBytes is Linux's limit on one argv string (MAX_ARG_STRLEN):
	// the prompt is passed as `claude -p <prompt>`, and a longer one fails
	// to start with E2BIG.
	maxPromptBytes = 128<<10 - 1
)

// Default values of the batch file.
const (
	DefaultStateDir     = "./.nightwatch"
	DefaultAgent        = "claude"
	DefaultTimeout      = 45 * time.Minute
	DefaultStallTimeout = 10 * time.Minute
	// DefaultMCPTimeout is Claude Code's own default for MCP_TIMEOUT.
	DefaultMCPTimeout = 30 * time.Second
	DefaultRetries    = 1
	DefaultMaxDefer   = time.Hour
	// DefaultAPIRetries is CLAUDE_CODE_MAX_RETRIES for the night's
	// sessions: the CLI's own retries of a failing API stay short, and the
	// night, not the CLI, does the long waiting.
	DefaultAPIRetries = 2
	// maxRetries catches a typo (retries: 100000) that would retry a broken
	// job all night.
	maxRetries = 100
	// maxTurns bounds a job's max_turns: far above any real session, and
	// small enough that a typo (40000 for 40) is caught.
	maxTurns = 10000
)

// DefaultHealth is the health section's defaults, those of the hook.
func DefaultHealth() Health {
	return Health{
		TTL:            2 * time.Minute,
		Backoff:        30 * time.Second,
		MaxBackoff:     10 * time.Minute,
		ProbeTimeout:   5 * time.Second,
		PrewarmTimeout: 2 * time.Minute,
		// The hook's defaults (NIGHTWATCH_RECONNECT_TIMEOUT,
		// NIGHTWATCH_FAILURE_THRESHOLD), so a night and a hook outside it
		// decide alike.
		ReconnectTimeout: 5 * time.Second,
		FailureThreshold: 3,
		MaxHold:          healthcheck.DefaultMaxHold,
	}
}

var topFields = []string{
	"version", "name", "schedule", "deadline", "max_parallel", "max_cost_usd",
	"state_dir", "env_file", "env", "fail_open", "agent", "defaults", "health",
	"servers", "jobs", "notify", "api_retries", "resume", "keep_awake", "api", "cluster",
	"session_env", "hook_transport",
}

// loader holds the state of one Load: where the file is, the variables
// known so far, and every problem found.
type loader struct {
	file     string // the path as given, for messages
	abs, dir string
	getenv   func(string) (string, bool)
	// env is where ${VAR} looks first: while env_file is read, the values
	// above in it; while env is read, env_file's; afterwards Batch.Env.
	env      map[string]string
	problems []Problem
	dropped  int // problems beyond maxProblems, only counted
	visits   int
	ownNodes int // the file's nodes without aliases (countNodes)
	tooBig   bool
	// Caches for files and PATH lookups that many jobs or servers share.
	prompts map[string]promptRead
	looked  map[string]string
	// agentOptional, reading: see LoadOptions.
	agentOptional, reading bool
	// warnings are mistakes that do not stop a night (Batch.Warnings).
	warnings []string
	// envFileLine and stateDirLine are the lines of env_file and
	// state_dir, for messages.
	envFileLine, stateDirLine int
	// refs records the variables expand looks up while a server's MCP
	// fields are read (Server.Vars); nil elsewhere.
	refs map[string]bool
	// sessionEnv are the session_env names read, checked against the
	// servers' variables once every server is read.
	sessionEnv []item
}

// warn records a mistake that does not stop the night (Batch.Cautions).
func (l *loader) warn(line int, field, format string, args ...any) {
	l.warnings = append(l.warnings, Problem{File: l.file, Line: line, Field: field, Message: fmt.Sprintf(format, args...)}.Error())
}

// literalSecret warns about a secret written in the batch file itself: it
// is kept by backups, shown in diffs and often committed, where an
// env_file (mode 0600) is not.
func (l *loader) literalSecret(it item, field string) {
	if it.literal && it.value != "" && redact.SensitiveName(it.key) && !redact.NotCredential(it.key) {
		l.warn(it.line, field, "a secret written in the batch file itself (backups, diffs and commits keep it): move it to the env_file (mode 0600) and write %s: ${%s} here", it.key, it.key)
	}
}

// maxProblems bounds the list: past a hundred, a user wants the first ones
// fixed and the file loaded again, and a hostile file must not make the
// error itself the thing that eats memory.
const maxProblems = 100

// Load reads the batch file at path, decodes it strictly, expands
// variables, resolves paths and commands, validates it and applies the
// defaults. getenv is the process environment (os.LookupEnv); nil is an
// empty one.
//
// ${VAR} and ${VAR:-default} are expanded in every string value except the
// prompt (the user's prose, where "${" may be literal) and names (of the
// batch, jobs and servers, and those listed in servers, needs and
// requires_env). A variable is looked up in env_file, then env (env wins
// over env_file, as in Batch.Env), then getenv.
//
// Every problem is collected: the error is a *LoadError listing each with
// its file, line and field.
func Load(path string, getenv func(string) (string, bool)) (*Batch, error) {
	return LoadWith(path, getenv, LoadOptions{})
}

// LoadOptions relax what a command does not need.
type LoadOptions struct {
	// AgentOptional turns a missing agent command into a warning in
	// Batch.Warnings: preflight checks servers and must work on a machine
	// that has Go but not (yet) Claude Code.
	AgentOptional bool
	// Reading: the command only reads the night's files (status, reset,
	// report, logs) and starts nothing, so a variable that is not set is
	// a caution, not a problem, and expands to "", except in state_dir,
	// which says where those files are. The night's variables often live
	// only in its scheduler's environment, not in the operator's shell.
	Reading bool
}

// LoadWith is Load with options.
func LoadWith(path string, getenv func(string) (string, bool), opts LoadOptions) (*Batch, error) {
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	l := &loader{file: path, getenv: getenv, env: map[string]string{}, agentOptional: opts.AgentOptional || opts.Reading,
		reading: opts.Reading}
	b := l.load()
	if b != nil {
		b.Cautions = l.warnings
	}
	if l.tooBig {
		// The rest is noise from a walk that stopped half-way.
		l.problems, l.dropped = l.problems[:0], 0
		l.problem(0, "", "%s", aliasBoundMessage(l.ownNodes))
	}
	if len(l.problems) > 0 {
		sortProblems(l.problems, l.file)
		if l.dropped > 0 {
			l.problems = append(l.problems, Problem{File: l.file, Message: fmt.Sprintf("… and %d more problems", l.dropped)})
		}
		return nil, &LoadError{Problems: l.problems}
	}
	return b, nil
}

func (l *loader) problem(line int, field, format string, args ...any) {
	l.problemIn(l.file, line, field, format, args...)
}

func (l *loader) problemIn(file string, line int, field, format string, args ...any) {
	if l.full() {
		l.dropped++
		return
	}
	// Names in a batch file (server names, env keys, unknown keys) are
	// anybody's bytes: no escape code reaches the operator's terminal.
	l.problems = append(l.problems, Problem{File: text.Printable(file), Line: line, Field: text.Printable(field),
		Message: text.Printable(fmt.Sprintf(format, args...))})
}

// full says no more problems are kept; costly messages can be skipped.
func (l *loader) full() bool { return len(l.problems) >= maxProblems }

func (l *loader) lookup(name string) (string, bool) {
	if v, ok := l.env[name]; ok {
		return v, true
	}
	return l.getenv(name)
}

func (l *loader) load() *Batch {
	abs, err := filepath.Abs(l.file)
	if err != nil {
		l.problem(0, "", "%v", err)
		return nil
	}
	l.abs, l.dir = abs, filepath.Dir(abs)
	data, err := readLimited(abs, maxBatchBytes)
	if err != nil {
		l.problem(0, "", "%v", err)
		return nil
	}
	root := l.parse(data)
	if root == nil {
		return nil
	}

	b := &Batch{File: l.abs, Dir: l.dir}
	f := l.fields(root, "", topFields...)

	// Order matters: names first, then the variables, so that every later
	// value can use them.
	l.version(b, f, root.Line)
	if p, ok := f["name"]; ok {
		if s, line, ok := l.text(p.val, "name"); ok {
			b.Name = s
			l.checkName(s, line, "name", "batch")
		}
	}
	if b.Name == "" {
		l.problem(root.Line, "name", "is required: it names the run, its lock and its journal")
	}
	l.variables(b, f)

	if p, ok := f["schedule"]; ok {
		if s, line, ok := l.str(p.val, "schedule"); ok {
			if err := checkSchedule(s); err != nil {
				l.problem(line, "schedule", "%q is not a cron schedule: %v; write five fields: minute (0-59) hour (0-23) day of month (1-31) month (1-12) day of week (0-6, 0 = Sunday), e.g. \"30 2 * * *\" for 02:30 every night, or a descriptor such as @daily", s, err)
			}
			b.Schedule = s
		}
	}
	if p, ok := f["deadline"]; ok {
		if s, line, ok := l.str(p.val, "deadline"); ok {
			if t, err := parseClock(s); err != nil {
				l.problem(line, "deadline", "%v", err)
			} else {
				b.Deadline = &t
			}
		}
	}
	b.MaxParallel = 1
	if p, ok := f["max_parallel"]; ok {
		if v, _, ok := l.integer(p.val, "max_parallel", 1); ok {
			b.MaxParallel = v
		}
	}
	if p, ok := f["max_cost_usd"]; ok {
		b.MaxCostUSD, _ = l.money(p.val, "max_cost_usd")
	}
	stateDir, stateLine := DefaultStateDir, root.Line
	if p, ok := f["state_dir"]; ok {
		if s, line, ok := l.str(p.val, "state_dir"); ok {
			stateDir, stateLine = s, line
		}
	}
	b.StateDir, _ = l.path(stateDir, stateLine, "state_dir")
	l.stateDirLine = stateLine
	if p, ok := f["fail_open"]; ok {
		b.FailOpen, _ = l.boolean(p.val, "fail_open")
	}
	b.HookTransport = HookAuto
	if p, ok := f["hook_transport"]; ok {
		if v, line, ok := l.str(p.val, "hook_transport"); ok {
			switch t := HookTransport(v); t {
			case HookAuto, HookCommand, HookHTTP:
				b.HookTransport = t
			default:
				l.problem(line, "hook_transport", "%q is not one of auto, command, http", v)
			}
		}
	}
	if p, ok := f["session_env"]; ok {
		b.SessionEnv = l.sessionEnvList(p, "session_env")
	}
	b.APIRetries = DefaultAPIRetries
	if p, ok := f["api_retries"]; ok {
		if v, line, ok := l.integer(p.val, "api_retries", 0); ok {
			if v > maxRetries {
				l.problem(line, "api_retries", "must be at most %d, not %d", maxRetries, v)
			} else {
				b.APIRetries = v
			}
		}
	}
	b.Resume, b.KeepAwake = true, true
	if p, ok := f["resume"]; ok {
		b.Resume, _ = l.boolean(p.val, "resume")
	}
	if p, ok := f["keep_awake"]; ok {
		b.KeepAwake, _ = l.boolean(p.val, "keep_awake")
	}
	l.apiWaits(b, f)
	l.cluster(b, f)
	l.agent(b, f, root.Line)
	l.notify(b, f)
	l.defaults(b, f)
	l.health(b, f)
	if p, ok := f["servers"]; ok {
		ps, _ := l.pairs(p.val, "servers")
		for _, sp := range ps {
			b.Servers = append(b.Servers, l.server(sp))
		}
	}
	l.jobs(b, f, root.Line)
	l.checkSessionEnv(b)
	l.checkRescue(b)
	l.exposed(b)
	return b
}

// readLimited reads a regular file of at most max bytes. A FIFO or device
// given by mistake would block or never end: it is refused at once.
func readLimited(path string, max int64) ([]byte, error) {
	data, err := atomicfile.Read(path, max)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is already in the message
	}
	switch {
	case err == nil:
		return data, nil
	case errors.Is(err, atomicfile.ErrNotRegular):
		return nil, err
	case errors.Is(err, atomicfile.ErrTooLarge):
		return nil, fmt.Errorf("larger than %d bytes", max)
	default:
		return nil, fmt.Errorf("cannot read: %w", err)
	}
}

// yamlLine is compiled on first use: every nightwatch process (the hook
// before each tool call included) would otherwise pay for it at start-up.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// parse decodes the YAML into a node tree and returns the top mapping.
func (l *loader) parse(data []byte) (root *yaml.Node) {
	defer func() {
		// The YAML parser is not ours; a panic on hostile input must
		// still end as a message, not a crash of the supervisor.
		if r := recover(); r != nil {
			l.problem(0, "", "cannot parse YAML: %v", r)
			root = nil
		}
	}()
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			l.problem(0, "", "the file is empty")
		} else {
			l.yamlError(err, data)
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		l.problem(extra.Line, "", "a batch file holds one YAML document; remove this \"---\" and what follows or put it in another file")
	} else if !errors.Is(err, io.EOF) {
		l.yamlError(err, data)
	}
	n := &doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	l.ownNodes = countNodes(n)
	n = l.node(n)
	if isNull(n) {
		l.problem(0, "", "the file is empty")
		return nil
	}
	if n.Kind != yaml.MappingNode {
		l.problem(n.Line, "", "the top level must be a mapping (version: 1, name: …), not %s", kindName(n))
		return nil
	}
	return n
}

func (l *loader) yamlError(err error, data []byte) {
	msg := err.Error()
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		// The parser names the line where the block it could not finish
		// began; the mistake a person made is usually further down.
		if tab := tabIndented(data); tab > 0 {
			l.problem(tab, "", "this line is indented with a tab; YAML indents with spaces only (YAML said: %s)", m[2])
			return
		}
		if bad, indent := misaligned(data, line); bad > 0 {
			l.problem(bad, "", "this line is indented by %d spaces, which lines up with no line above it; indent it like the lines it belongs with (YAML said at line %d: %s)",
				indent, line, m[2])
			return
		}
		l.problem(line, "", "invalid YAML: %s", m[2])
		return
	}
	l.problem(0, "", "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// tabIndented is the first line (1-based) whose indentation holds a tab,
// or 0.
func tabIndented(data []byte) int {
	for i, line := range strings.Split(string(data), "\n") {
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if strings.Contains(indent, "\t") && strings.TrimSpace(line) != "" {
			return i + 1
		}
	}
	return 0
}

// misaligned finds, from line from (1-based) on, the first line that
// dedents to a column no line above it starts at (its content, or the
// content after a "- "): the usual cause of "did not find expected key".
// It returns the line and its indentation, or 0.
func misaligned(data []byte, from int) (int, int) {
	columns := map[int]bool{0: true}
	prev := 0
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(trimmed)
		if i+1 >= from && indent < prev && !columns[indent] {
			return i + 1, indent
		}
		columns[indent] = true
		// "- key: v" also opens the column of key.
		for rest, col := trimmed, indent; strings.HasPrefix(rest, "- "); {
			after := strings.TrimLeft(rest[1:], " ")
			col += len(rest) - len(after)
			columns[col] = true
			rest = after
		}
		prev = indent
	}
	return 0, 0
}

func (l *loader) version(b *Batch, f map[string]pair, rootLine int) {
	p, ok := f["version"]
	if !ok {
		l.problem(rootLine, "version", "is required: write version: 1")
		return
	}
	v, line, ok := l.integer(p.val, "version", 0)
	if !ok {
		return
	}
	if v != 1 {
		l.problem(line, "version", "version %d is not supported by this nightwatch (it reads version 1)", v)
		return
	}
	b.Version = v
}

// validName is what may be used in a file name: the batch name names the
// lock and the journal, a job name its log files.
// validName: 1 to 128 of [A-Za-z0-9._-]. Checked by hand: the regular
// expression {1,128} compiles into 128 copies and cost every process two
// milliseconds at start-up.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func (l *loader) checkName(s string, line int, field, what string) bool {
	if !validName(s) || strings.Contains(s, "..") || s == "." {
		l.problem(line, field, "%s name %q must be 1–128 letters, digits, '.', '_' or '-', without \"..\" (it is used in file names)", what, s)
		return false
	}
	return true
}

// variables reads env_file, then env, and sets Batch.Env: env_file's values
// overlaid by env's. From here on ${VAR} sees Batch.Env before getenv.
func (l *loader) variables(b *Batch, f map[string]pair) {
	merged := map[string]string{}
	if p, ok := f["env_file"]; ok {
		if s, line, ok := l.str(p.val, "env_file"); ok {
			if path, ok := l.path(s, line, "env_file"); ok {
				b.EnvFile, l.envFileLine = path, line
				b.EnvFileKeys = l.readEnvFile(path, s, line, merged)
			}
		}
	}
	l.env = merged
	if p, ok := f["env"]; ok {
		// Read against env_file and the process only, so that the result
		// does not depend on the order of the keys.
		fromEnv := l.strMap(p.val, "env")
		merged = maps.Clone(merged)
		for _, it := range fromEnv {
			if !isVarName(it.key) {
				l.problem(it.line, join("env", it.key), "is not a variable name (letters, digits and _, not starting with a digit)")
				continue
			}
			l.literalSecret(it, join("env", it.key))
			merged[it.key] = it.value
		}
	}
	l.env = merged
	if len(merged) > 0 {
		b.Env = merged
	}
}

// readEnvFile reads a dotenv file into dst. Its problems name the env_file
// and its own line; written is the path as the batch file gives it, joined
// to the batch file's folder as given, so the message points at a file the
// user can open from where they ran the command.
func (l *loader) readEnvFile(path, written string, line int, dst map[string]string) (keys []string) {
	data, err := readLimited(path, maxEnvBytes)
	if err != nil {
		l.problem(line, "env_file", "%s: %v", path, err)
		return nil
	}
	if fi, err := os.Stat(path); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		l.warn(line, "env_file", "%s can be read by other users (mode %04o): chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	shown := path
	if !filepath.IsAbs(written) && !strings.HasPrefix(written, "~") {
		shown = filepath.Join(filepath.Dir(l.file), written)
	}
	vars, errs := parseDotenv(string(data), l.lookup)
	for _, e := range errs {
		l.problemIn(shown, e.line, "", "%s", e.msg)
	}
	for _, v := range vars {
		if _, seen := dst[v.key]; !seen {
			keys = append(keys, v.key)
		}
		dst[v.key] = v.value
	}
	return keys
}

var cronParse = cron.ParseStandard

// checkSchedule validates a cron line. robfig/cron panics on some inputs
// ("TZ=x" with no space): recover, a bad line is a message.
func checkSchedule(s string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unreadable")
		}
	}()
	_, err = cronParse(s)
	return err
}

// parseClock reads "HH:MM", 24-hour.
func parseClock(s string) (ClockTime, error) {
	h, m, ok := strings.Cut(s, ":")
	hour, err1 := strconv.Atoi(h)
	minute, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(h) < 1 || len(h) > 2 || len(m) != 2 ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || h[0] == '+' || h[0] == '-' || m[0] == '+' || m[0] == '-' {
		return ClockTime{}, fmt.Errorf("%q is not a time of day: write 24-hour HH:MM, such as \"07:00\"", s)
	}
	return ClockTime{Hour: hour, Minute: minute}, nil
}

// String is "07:00".
func (c ClockTime) String() string { return fmt.Sprintf("%02d:%02d", c.Hour, c.Minute) }

// notify reads `notify: {webhook: URL, command: [argv…]}`: how the
// operator hears that the night ended.
// apiWaits reads the api: block, the night's waits on the model's API.
func (l *loader) apiWaits(b *Batch, f map[string]pair) {
	p, ok := f["api"]
	if !ok {
		return
	}
	af := l.fields(p.val, "api", "check_interval", "max_check_interval", "max_wait", "pause_without_reset",
		"rate_limit_pause", "max_rate_limit_pause")
	w := &b.API
	for _, d := range []struct {
		name string
		v    *time.Duration
	}{{"check_interval", &w.CheckInterval}, {"max_check_interval", &w.MaxCheckInterval}, {"max_wait", &w.MaxWait},
		{"pause_without_reset", &w.PauseWithoutReset}, {"rate_limit_pause", &w.RateLimitPause},
		{"max_rate_limit_pause", &w.MaxRateLimitPause}} {
		q, ok := af[d.name]
		if !ok {
			continue
		}
		v, ok := l.duration(q.val, "api."+d.name)
		if !ok {
			continue
		}
		*d.v = v
	}
	for _, c := range []struct {
		lo, hi   string
		min, max *time.Duration
	}{{"check_interval", "max_check_interval", &w.CheckInterval, &w.MaxCheckInterval},
		{"rate_limit_pause", "max_rate_limit_pause", &w.RateLimitPause, &w.MaxRateLimitPause}} {
		if *c.min > 0 && *c.max > 0 && *c.max < *c.min {
			l.problem(af[c.hi].line(), "api."+c.hi, "%s is less than %s (%s)", *c.max, c.lo, *c.min)
		}
	}
}

func (l *loader) notify(b *Batch, f map[string]pair) {
	p, ok := f["notify"]
	if !ok {
		return
	}
	nf := l.fields(p.val, "notify", "webhook", "command")
	if q, ok := nf["webhook"]; ok {
		if s, line, ok := l.str(q.val, "notify.webhook"); ok {
			if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				l.problem(line, "notify.webhook", "want an http(s) URL")
			} else {
				b.Notify.Webhook = s
			}
		}
	}
	if q, ok := nf["command"]; ok {
		b.Notify.Command = values(l.strList(q.val, "notify.command", true))
		if len(b.Notify.Command) == 0 {
			l.problem(q.line(), "notify.command", "want the program and its arguments, e.g. [notify-send, nightwatch]")
		} else if cmd, ok := l.executable(b.Notify.Command[0], q.line(), "notify.command", false); ok {
			b.Notify.Command[0] = cmd
		}
	}
}

func (l *loader) agent(b *Batch, f map[string]pair, rootLine int) {
	command, line := DefaultAgent, rootLine
	if p, ok := f["agent"]; ok {
		af := l.fields(p.val, "agent", "command", "args")
		line = p.line()
		if q, ok := af["command"]; ok {
			if s, l2, ok := l.str(q.val, "agent.command"); ok {
				command, line = s, l2
			}
		}
		if q, ok := af["args"]; ok {
			b.Agent.Args = values(l.strList(q.val, "agent.args", true))
		}
	}
	before := len(l.problems)
	b.Agent.Command, _ = l.executable(command, line, "agent.command", true)
	if l.agentOptional && len(l.problems) > before {
		for _, p := range l.problems[before:] {
			b.Warnings = append(b.Warnings, p.Error()+" (needed by `nightwatch run`, not by preflight)")
		}
		l.problems = l.problems[:before]
	}
}

func (l *loader) defaults(b *Batch, f map[string]pair) {
	b.Defaults = JobDefaults{
		Timeout:      DefaultTimeout,
		StallTimeout: DefaultStallTimeout,
		MCPTimeout:   DefaultMCPTimeout,
		Retries:      DefaultRetries,
		OnUnhealthy:  Defer,
		MaxDefer:     DefaultMaxDefer,
		SideEffects:  Once,
	}
	p, ok := f["defaults"]
	if !ok {
		return
	}
	df := l.fields(p.val, "defaults", "timeout", "stall_timeout", "retries", "on_unhealthy", "mcp_timeout", "max_defer", "verify",
		"side_effects", "max_cost_usd", "max_turns")
	l.jobSettings(df, "defaults", &b.Defaults)
	// max_defer is batch-wide: it is read here and not by jobSettings,
	// because a Job has no field for it.
	if q, ok := df["max_defer"]; ok {
		if d, ok := l.duration(q.val, "defaults.max_defer"); ok {
			b.Defaults.MaxDefer = d
		}
	}
}

// jobSettings reads the settings a job shares with defaults, over the
// values already in s.
func (l *loader) jobSettings(f map[string]pair, field string, s *JobDefaults) {
	if p, ok := f["timeout"]; ok {
		if d, ok := l.duration(p.val, field+".timeout"); ok {
			s.Timeout = d
		}
	}
	if p, ok := f["stall_timeout"]; ok {
		if d, ok := l.duration(p.val, field+".stall_timeout"); ok {
			s.StallTimeout = d
		}
	}
	if p, ok := f["mcp_timeout"]; ok {
		if d, ok := l.duration(p.val, field+".mcp_timeout"); ok {
			s.MCPTimeout = d
		}
	}
	if p, ok := f["retries"]; ok {
		if v, ok := l.boundedInteger(p.val, field+".retries", maxRetries); ok {
			s.Retries = v
		}
	}
	if p, ok := f["verify"]; ok {
		s.Verify = l.verify(p, field+".verify")
	}
	if p, ok := f["max_cost_usd"]; ok {
		if v, ok := l.money(p.val, field+".max_cost_usd"); ok {
			s.MaxCostUSD = v
		}
	}
	if p, ok := f["max_turns"]; ok {
		if v, ok := l.boundedInteger(p.val, field+".max_turns", maxTurns); ok {
			s.MaxTurns = v
		}
	}
	if p, ok := f["side_effects"]; ok {
		if v, line, ok := l.str(p.val, field+".side_effects"); ok {
			switch o := SideEffects(v); o {
			case Once, AllowRepeat:
				s.SideEffects = o
			default:
				l.problem(line, field+".side_effects", "%q is not one of once, allow-repeat", v)
			}
		}
	}
	if p, ok := f["on_unhealthy"]; ok {
		if v, line, ok := l.str(p.val, field+".on_unhealthy"); ok {
			switch o := OnUnhealthy(v); o {
			case Defer, Skip, Run:
				s.OnUnhealthy = o
			default:
				l.problem(line, field+".on_unhealthy", "%q is not one of defer, skip, run", v)
			}
		}
	}
}

func (l *loader) health(b *Batch, f map[string]pair) {
	b.Health = DefaultHealth()
	p, ok := f["health"]
	if !ok {
		return
	}
	hf := l.fields(p.val, "health", "ttl", "backoff", "max_backoff", "probe_timeout", "prewarm_timeout",
		"reconnect_timeout", "failure_threshold", "max_hold")
	if q, ok := hf["max_hold"]; ok {
		if v, ok := l.maxHold(q.val, "health.max_hold"); ok {
			b.Health.MaxHold, b.Health.MaxHoldSet = v, true
		}
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{
		{"ttl", &b.Health.TTL},
		{"backoff", &b.Health.Backoff},
		{"max_backoff", &b.Health.MaxBackoff},
		{"probe_timeout", &b.Health.ProbeTimeout},
		{"prewarm_timeout", &b.Health.PrewarmTimeout},
		{"reconnect_timeout", &b.Health.ReconnectTimeout},
	} {
		if q, ok := hf[d.key]; ok {
			if v, ok := l.duration(q.val, "health."+d.key); ok {
				*d.dst = v
			}
		}
	}
	if q, ok := hf["failure_threshold"]; ok {
		if v, line, ok := l.integer(q.val, "health.failure_threshold", 1); ok {
			if v > 1000 {
				l.problem(line, "health.failure_threshold", "must be 1000 or less, not %d", v)
			} else {
				b.Health.FailureThreshold = v
			}
		}
	}
	if b.Health.MaxBackoff < b.Health.Backoff {
		line := p.line()
		if q, ok := hf["max_backoff"]; ok {
			line = q.line()
		}
		l.problem(line, "health.max_backoff", "%s is below backoff %s", b.Health.MaxBackoff, b.Health.Backoff)
	}
}

// boundedInteger reads a whole number from 0 to max for field, saying at
// its line when it is larger.
func (l *loader) boundedInteger(n *yaml.Node, field string, max int) (int, bool) {
	v, line, ok := l.integer(n, field, 0)
	if !ok {
		return 0, false
	}
	if v > max {
		l.problem(line, field, "must be at most %d, not %d", max, v)
		return 0, false
	}
	return v, true
}
