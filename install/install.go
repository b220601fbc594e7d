// Package install puts a batch on the machine's own scheduler: a launchd
// agent (macOS), a systemd user service and timer, a crontab line, or a
// Task Scheduler task (Windows). Each runs `<nightwatch> run <batch file>`
// at the batch's schedule.
//
// The night runs without the login shell: launchd expands no `~`, starts
// in /, and has none of the variables the shell's rc files export. So the
// installers write absolute paths only and spell out the environment the
// night needs; they never carry a fail-open flag into the schedule.
package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/batchsecrets"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// Kind is a scheduler.
type Kind string

const (
	Launchd  Kind = "launchd"
	Systemd  Kind = "systemd"
	Cron     Kind = "cron"
	Schtasks Kind = "schtasks"
)

// Kinds lists the schedulers, for flag help and errors.
var Kinds = []Kind{Launchd, Systemd, Cron, Schtasks}

// Plan is everything an install or uninstall would do. PlanInstall and
// PlanUninstall only compute it (that is --dry-run); Apply does it.
type Plan struct {
	Kind Kind
	// Dirs are created (0700) before anything else: launchd, systemd and
	// the shell do not create a missing log folder, they fail the night.
	Dirs []string
	// Files are written atomically; their parent folders are created.
	Files []File
	// Remove are files deleted (a missing one is not an error).
	Remove []string
	// CrontabMarker identifies the batch's crontab line; when set, Apply
	// removes every line carrying it and then adds CrontabLine, if any.
	CrontabMarker string
	CrontabLine   string
	// Prepare commands run first and may fail: unloading a job that may
	// not be loaded (launchctl bootout, systemctl disable).
	Prepare [][]string
	// Commands load what was written; the first failure stops Apply.
	Commands [][]string
	Notes    []string

	// secrets are values written into Files or CrontabLine; Print masks
	// them so that a dry run in a terminal or a CI log shows no key.
	secrets []string
}

// File is one generated file.
type File struct {
	Path    string
	Mode    os.FileMode
	Content []byte
	// UTF16 writes Content (UTF-8 text) as UTF-16LE with a byte-order
	// mark: the task XML, in the encoding Task Scheduler exports.
	UTF16 bool
}

// Options say what to install and for whom.
type Options struct {
	Binary string      // absolute path of the nightwatch executable
	Batch  *jobs.Batch // loaded with jobs.Load
	Home   string      // the user's home folder, absolute
	UID    int         // for launchctl's gui/<uid> domain
	// Getenv is the installer's environment (os.LookupEnv): where the
	// values the batch takes from the process come from now.
	Getenv func(string) (string, bool)
	LogDir string // default <state_dir>/logs
	// Now dates the first Task Scheduler trigger (the day after); nil =
	// time.Now.
	Now func() time.Time
	// GOOS is the platform the binary is checked for ("" = this one): a
	// Windows executable has no execute bit, it is an .exe.
	GOOS string
	// Worker, when set, installs (or uninstalls) the batch's cluster
	// worker, `nightwatch worker FILE`, kept running beside the night's
	// entry; nil is the night itself.
	Worker *WorkerOptions
}

// fileMode is every generated file's mode: they may hold API keys, which
// is the only way launchd makes a key available to the night.
const fileMode os.FileMode = 0o600

// job is what every scheduler runs, computed once from Options.
type job struct {
	name, label string
	bin, file   string
	dir, logDir string
	home        string
	sched       *schedule
	env         []envVar // sorted by name
	notes       []string
	secrets     []string
	worker      *WorkerOptions // nil: the night
	winUser     string         // DOMAIN\user for a worker's logon trigger
}

type envVar struct{ name, value string }

// PlanInstall computes the files, crontab line and commands that install
// the batch on kind's scheduler.
func PlanInstall(kind Kind, o Options) (*Plan, error) {
	j, err := prepare(kind, o)
	if err != nil {
		return nil, err
	}
	var p *Plan
	switch {
	case j.worker != nil:
		p, err = planWorkerEntry(kind, j, o.UID)
	case kind == Launchd:
		p, err = planLaunchd(j, o.UID)
	case kind == Systemd:
		p, err = planSystemd(j)
	case kind == Cron:
		p, err = planCron(j)
	case kind == Schtasks:
		now := time.Now
		if o.Now != nil {
			now = o.Now
		}
		p, err = planSchtasks(j, now())
	}
	if err != nil {
		return nil, err
	}
	p.Kind = kind
	p.Dirs = append([]string{j.logDir}, p.Dirs...)
	p.Notes = append(j.notes, p.Notes...)
	p.secrets = j.secrets
	return p, nil
}

// PlanUninstall computes what removes the batch from kind's scheduler. It
// needs only the batch's name, the home folder and the UID.
func PlanUninstall(kind Kind, o Options) (*Plan, error) {
	if err := checkKind(kind); err != nil {
		return nil, err
	}
	if o.Batch == nil || o.Batch.Name == "" {
		return nil, errors.New("install: no batch (or a batch without a name)")
	}
	name := o.Batch.Name
	if kind != Cron {
		if err := absPath("home folder", o.Home); err != nil {
			return nil, err
		}
	}
	p := &Plan{Kind: kind}
	if o.Worker != nil {
		// No cluster check: a worker installed while the batch had a
		// cluster: section can still be removed after it is gone.
		if err := planUninstallWorker(p, o.Home, name, o.UID); err != nil {
			return nil, err
		}
		p.Notes = append(p.Notes, "log files are left in place")
		return p, nil
	}
	switch kind {
	case Launchd:
		label := launchdLabel(name)
		p.Prepare = [][]string{{"launchctl", "bootout", fmt.Sprintf("gui/%d/%s", o.UID, label)}}
		p.Remove = []string{plistPath(o.Home, name)}
	case Systemd:
		svc, tmr := systemdPaths(o.Home, name)
		p.Prepare = [][]string{{"systemctl", "--user", "disable", "--now", filepath.Base(tmr)}}
		p.Remove = []string{tmr, svc}
		p.Commands = [][]string{{"systemctl", "--user", "daemon-reload"}}
	case Cron:
		p.CrontabMarker = cronMarker(name)
	case Schtasks:
		p.Prepare = [][]string{{"schtasks", "/Delete", "/TN", SchtasksName(name), "/F"}}
		p.Remove = []string{schtasksXMLPath(o.Home, name)}
	}
	p.Notes = append(p.Notes, "log files are left in place")
	return p, nil
}

func checkKind(kind Kind) error {
	if !slices.Contains(Kinds, kind) {
		return fmt.Errorf("install: unknown scheduler %q (want launchd, systemd, cron or schtasks)", kind)
	}
	return nil
}

// prepare checks the options and computes what every scheduler needs.
func prepare(kind Kind, o Options) (*job, error) {
	if err := checkKind(kind); err != nil {
		return nil, err
	}
	b := o.Batch
	if b == nil || b.Name == "" {
		return nil, errors.New("install: no batch (or a batch without a name)")
	}
	if o.Getenv == nil {
		o.Getenv = func(string) (string, bool) { return "", false }
	}
	j := &job{name: b.Name, label: launchdLabel(b.Name), bin: o.Binary, file: b.File, dir: b.Dir, home: o.Home}
	j.logDir = o.LogDir
	if j.logDir == "" && b.StateDir != "" {
		j.logDir = filepath.Join(b.StateDir, "logs")
	}
	for _, c := range []struct{ what, path string }{
		{"nightwatch binary", j.bin}, {"batch file", j.file}, {"batch folder", j.dir},
		{"log folder", j.logDir}, {"home folder", j.home},
	} {
		if err := absPath(c.what, c.path); err != nil {
			return nil, err
		}
	}
	goos := o.GOOS
	if goos == "" {
		goos = runtime.GOOS
	}
	if err := checkBinary(j.bin, goos); err != nil {
		return nil, err
	}
	if o.Worker != nil {
		// The worker is not a night: it has no schedule of its own (it
		// runs all the time), and only a cluster's night has workers.
		if b.Cluster == nil {
			return nil, errNoCluster(b.File)
		}
		if err := checkWorker(o.Worker); err != nil {
			return nil, err
		}
		if err := notANight(kind, o.Home, b.Name); err != nil {
			return nil, err
		}
		j.worker = o.Worker
		if u, ok := o.Getenv("USERNAME"); ok && u != "" {
			j.winUser = u
			if d, ok := o.Getenv("USERDOMAIN"); ok && d != "" {
				j.winUser = d + `\` + u
			}
		}
	} else {
		var err error
		if j.sched, err = parseSchedule(b.Schedule); err != nil {
			return nil, err
		}
	}
	if b.FailOpen {
		j.notes = append(j.notes, "WARNING: the batch sets fail_open: true, so the night lets calls to dead servers through; remove it from "+b.File+" (it is a debugging flag)")
	}
	if err := j.environment(b, o.Getenv); err != nil {
		return nil, err
	}
	return j, nil
}

// absPath refuses what launchd and cron would not understand: a relative
// path (launchd starts the job in /) or a "~" (nothing expands it).
func absPath(what, p string) error {
	switch {
	case p == "":
		return fmt.Errorf("install: the %s is not set", what)
	case strings.ContainsFunc(p, unicode.IsControl):
		// A newline in a path would end the crontab line and start another
		// entry of the path's choosing (and uninstall would remove one).
		return fmt.Errorf("install: the %s %s contains a control character (a newline?); a schedule entry cannot carry it: rename the folder",
			what, strconv.Quote(p))
	case strings.HasPrefix(p, "~") || strings.Contains(p, "/~") || strings.Contains(p, `\~`):
		return fmt.Errorf("install: the %s %q contains a ~: launchd and cron do not expand it; write the path out in full", what, p)
	case !filepath.IsAbs(p):
		return fmt.Errorf("install: the %s %q is relative: the scheduler starts the night in another folder; give an absolute path", what, p)
	}
	return nil
}

// checkBinary makes sure the night will find the program: a `go run`
// binary lives in a temporary folder that is gone by 2 a.m. On Windows a
// file is executable by its extension, not by a mode bit (Go reports 0666
// for every writable file there).
func checkBinary(p, goos string) error {
	if strings.Contains(p, string(filepath.Separator)+"go-build") {
		return fmt.Errorf("install: %s is a temporary `go run` binary; build or install nightwatch and run the installer from there", p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("install: nightwatch binary: %w", err)
	}
	executable := fi.Mode().Perm()&0o111 != 0
	if goos == "windows" {
		executable = strings.EqualFold(filepath.Ext(p), ".exe")
	}
	if !fi.Mode().IsRegular() || !executable {
		return fmt.Errorf("install: nightwatch binary %s is not an executable file", p)
	}
	return nil
}

// varRef finds ${NAME} and ${NAME:-default} in the batch and env files.
// It is compiled on first use: every process of the one binary (each hook
// call) would otherwise pay for it at start-up.
var varRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`) })

// environment computes the variables written into the schedule: PATH,
// HOME, and the variables the batch takes from the process — its servers'
// requires_env and any ${VAR} in the batch file or env_file that the batch
// does not define itself — when they have a value now and hold nothing
// secret. Under launchd or cron the night has none of the login shell's
// variables.
//
// No secret value is ever written: a plist, a unit or a crontab line is
// read by backup tools, shown by `ps` (cron runs the line through sh -c)
// and copied between machines. `run` reads the batch's env and env_file
// itself, so what they define is not written either; a secret the batch
// takes from the shell is named in the notes with where to put it instead.
func (j *job) environment(b *jobs.Batch, getenv func(string) (string, bool)) error {
	vals := map[string]string{}
	names := map[string]bool{}
	required := map[string]bool{}
	for _, s := range b.Servers {
		for _, k := range s.RequiresEnv {
			// The server's own env gives it (a ${VAR:-default}): the night
			// has it without the shell, as the loader judged.
			names[k], required[k] = true, required[k] || s.MCP.Env[k] == ""
		}
	}
	// A ${VAR} in a prompt is not expanded, so this may pick up a name the
	// night does not need; it is only written if set now.
	for _, f := range []string{b.File, b.EnvFile} {
		if f == "" {
			continue
		}
		data, err := atomicfile.Read(f, 0)
		if err != nil {
			return fmt.Errorf("install: %w", err)
		}
		for _, m := range varRef().FindAllSubmatch(data, -1) {
			names[string(m[1])] = true
		}
	}
	var fromShell []string
	if c := b.Cluster; c != nil {
		// The cluster's connection string holds its password: never in a
		// schedule entry. The night reads it from env_file; one set only
		// in this shell would be missing at 2 a.m.
		delete(names, c.DatabaseEnv)
		if _, inFile := b.Env[c.DatabaseEnv]; !inFile {
			if v, ok := getenv(c.DatabaseEnv); ok && v != "" {
				fromShell = append(fromShell, c.DatabaseEnv)
				j.secrets = append(j.secrets, v)
			} else {
				j.notes = append(j.notes, fmt.Sprintf("WARNING: the batch's cluster: reads its connection string from %s, which is set neither now nor in an env_file; the night cannot reach its database until it is in the env_file", c.DatabaseEnv))
			}
		}
	}
	for k := range names {
		if _, ok := b.Env[k]; ok {
			continue // the night reads it from the batch or its env_file
		}
		v, ok := getenv(k)
		switch {
		case !ok || v == "":
			if required[k] {
				j.notes = append(j.notes, fmt.Sprintf("WARNING: %s is required by a server but is not set now; the night will stop at preflight until it is in the env_file", k))
			}
		case redact.SensitiveName(k) || required[k] || batchsecrets.ServerUses(b, v) != "":
			fromShell = append(fromShell, k)
			j.secrets = append(j.secrets, v)
		default:
			vals[k] = v
		}
	}
	if len(fromShell) > 0 {
		slices.Sort(fromShell)
		where := "an env_file (env_file: ./night.env in the batch, mode 0600)"
		if b.EnvFile != "" {
			where = b.EnvFile
		}
		j.notes = append(j.notes, fmt.Sprintf("NOT written (secrets never go into a schedule entry): %s; the night reads them only from %s, so put them there",
			strings.Join(fromShell, ", "), where))
	}
	path := b.Env["PATH"]
	if path == "" {
		path, _ = getenv("PATH")
	}
	if path = j.cleanPath(path); path != "" {
		vals["PATH"] = path
	} else {
		j.notes = append(j.notes, "WARNING: no PATH to write; the night gets the scheduler's minimal one")
	}
	vals["HOME"] = j.home

	for _, k := range knobs.EnvFailOpen {
		_, inBatch := b.Env[k]
		_, written := vals[k]
		_, inShell := getenv(k)
		if inBatch || inShell || written {
			delete(vals, k)
			j.notes = append(j.notes, fmt.Sprintf("%s is not written: fail-open is a debugging flag and a night must not run with it", k))
		}
	}

	for _, k := range slices.Sorted(maps.Keys(vals)) {
		v := vals[k]
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("install: the value of %s contains a control character (a newline?); a schedule file cannot carry it", k)
		}
		j.env = append(j.env, envVar{k, v})
	}
	// Values the batch knows as secrets are masked in the dry-run print
	// even though none is written: a PATH entry may still spell one.
	for k, v := range b.Env {
		if redact.SensitiveName(k) {
			j.secrets = append(j.secrets, v)
		}
	}
	return nil
}

// cleanPath drops PATH entries the night cannot use: relative ones or
// ones with a "~", which only an interactive shell resolves.
func (j *job) cleanPath(path string) string {
	var keep, dropped []string
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) || strings.Contains(d, "~") {
			if d != "" {
				dropped = append(dropped, d)
			}
			continue
		}
		if !slices.Contains(keep, d) {
			keep = append(keep, d)
		}
	}
	if len(dropped) > 0 {
		j.notes = append(j.notes, fmt.Sprintf("PATH entries dropped (relative or with ~, meaningless to the scheduler): %s", strings.Join(dropped, " ")))
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// Apply carries out a plan: folders, files, the crontab line, then the
// commands through run (which the caller can replace to dry-run or test).
func Apply(ctx context.Context, p *Plan, run func(ctx context.Context, argv []string) error) error {
	for _, argv := range p.Prepare {
		_ = run(ctx, argv) // unloading what is not loaded fails; that is fine
	}
	for _, d := range p.Dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("install: %w", err)
		}
	}
	for _, f := range p.Files {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			return fmt.Errorf("install: %w", err)
		}
		mode := f.Mode
		if mode == 0 {
			mode = fileMode
		}
		content := f.Content
		if f.UTF16 {
			content = utf16LE(content)
		}
		if err := atomicfile.WriteFile(f.Path, content, mode); err != nil {
			return fmt.Errorf("install: %w", err)
		}
	}
	for _, r := range p.Remove {
		if err := os.Remove(r); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("install: %w", err)
		}
	}
	if p.CrontabMarker != "" {
		if err := updateCrontab(ctx, p.CrontabMarker, p.CrontabLine); err != nil {
			return err
		}
	}
	for _, argv := range p.Commands {
		if err := run(ctx, argv); err != nil {
			return fmt.Errorf("install: %s: %w", strings.Join(argv, " "), err)
		}
	}
	return nil
}

// ApplyUninstall carries out a plan from PlanUninstall.
func ApplyUninstall(ctx context.Context, p *Plan, run func(ctx context.Context, argv []string) error) error {
	return Apply(ctx, p, run)
}

// installCommandTimeout bounds one scheduler command (systemctl,
// launchctl, schtasks): none of them waits for anything.
const installCommandTimeout = time.Minute

// RunCommand is the run function for Apply: the command, in a group of its
// own and bounded, with what it wrote to stderr in the error.
func RunCommand(ctx context.Context, argv []string) error {
	_, err := proc.Run(ctx, proc.Spec{Argv: argv, Timeout: installCommandTimeout})
	return err
}

// Print writes the plan for --dry-run. Secret values are masked.
func (p *Plan) Print(w io.Writer) {
	mask := func(s string) string { return redact.String(s, p.secrets...) }
	fmt.Fprintf(w, "# nightwatch %s plan\n", p.Kind)
	for _, d := range p.Dirs {
		fmt.Fprintf(w, "\nmkdir -p -m 0700 %s\n", d)
	}
	for _, f := range p.Files {
		enc := ""
		if f.UTF16 {
			enc = ", as UTF-16LE"
		}
		fmt.Fprintf(w, "\n--- write %s (mode %#o%s)\n%s", f.Path, f.Mode.Perm(), enc, mask(string(f.Content)))
		if !bytes.HasSuffix(f.Content, []byte("\n")) {
			fmt.Fprintln(w)
		}
	}
	for _, r := range p.Remove {
		fmt.Fprintf(w, "\nremove %s\n", r)
	}
	if p.CrontabMarker != "" {
		fmt.Fprintf(w, "\n--- crontab: replace the lines ending in %q with:\n", p.CrontabMarker)
		if p.CrontabLine != "" {
			fmt.Fprintln(w, mask(p.CrontabLine))
		} else {
			fmt.Fprintln(w, "(nothing)")
		}
	}
	if len(p.Prepare)+len(p.Commands) > 0 {
		fmt.Fprintln(w, "\n--- run")
		for _, argv := range p.Prepare {
			fmt.Fprintf(w, "%s   (may fail: not loaded)\n", strings.Join(argv, " "))
		}
		for _, argv := range p.Commands {
			fmt.Fprintln(w, strings.Join(argv, " "))
		}
	}
	if len(p.Notes) > 0 {
		fmt.Fprintln(w, "\n--- notes")
		for _, n := range p.Notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}
