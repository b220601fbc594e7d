// Package hookexe is the dedicated hook executable as the rest of
// nightwatch sees it: its name beside the nightwatch binary, the id that
// proves the two were built from the same source (so they cannot disagree
// about the cache's format or a decision), and the command line a session
// or a settings file runs. nightwatch-hook is the hook's hot path
// (hook/hot: no prober, logger, network client, database, scheduler or
// command framework), so each tool call starts a small process; it hands
// every call the cache cannot answer to `nightwatch hook` beside it
// (Handoff). `nightwatch hook` stays the whole hook, and is what is
// injected when the sibling is missing or does not match.
package hookexe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// Name is the hook executable's base name, without the platform's
// extension (see Path).
const Name = "nightwatch-hook"

// IDFlag makes nightwatch-hook (and `nightwatch hook`) print its ID and
// exit.
const IDFlag = "--build-id"

// formatRevision changes whenever the hook's protocol with the rest of
// nightwatch changes (the flags it is given, the variables it reads);
// the cache's own version and layout are part of ID too.
const formatRevision = 1

// ID names what a binary of this build expects of the cache and of its
// command line, and the build itself: the cache format version, its
// written layout, this package's revision, and the VCS revision and Go
// version the binary was built from. Two binaries with the same ID were
// built from the same source; any other pair is refused.
func ID() string { return idOnce() }

var idOnce = sync.OnceValue(func() string {
	var b strings.Builder
	b.WriteString("nightwatch-hook cache=v")
	b.WriteString(strconv.Itoa(healthcheck.FileVersion))
	b.WriteString("/" + healthcheck.Layout)
	b.WriteString(" protocol=" + strconv.Itoa(formatRevision))
	if bi, ok := debug.ReadBuildInfo(); ok {
		b.WriteString(" go=" + bi.GoVersion)
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if r := settings["vcs.revision"]; r != "" {
			b.WriteString(" rev=" + r)
			if settings["vcs.modified"] == "true" {
				b.WriteString("+modified")
			}
		}
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.WriteString(" version=" + bi.Main.Version)
		}
	}
	return b.String()
})

// Path is the hook executable that belongs beside the nightwatch binary
// at nightwatch (".exe" on Windows, as nightwatch.exe has).
func Path(nightwatch string) string {
	return PathFor(nightwatch, runtime.GOOS)
}

// PathFor is Path for the platform goos.
func PathFor(nightwatch, goos string) string {
	dir := filepath.Dir(nightwatch)
	if goos == "windows" {
		return filepath.Join(dir, Name+".exe")
	}
	return filepath.Join(dir, Name)
}

// Choice is the hook command a session or a settings file gets.
type Choice struct {
	// Argv is the command: [nightwatch-hook] or [nightwatch, "hook"],
	// before the knob flags.
	Argv []string
	// Dedicated is true when Argv is the dedicated executable.
	Dedicated bool
	// Note says, when the dedicated executable is not used, why: it is
	// said out loud once by whoever injects the hook.
	Note string
}

var (
	chosenMu sync.Mutex
	chosen   = map[string]Choice{}
)

// checkTimeout bounds the one run of the sibling that reads its ID.
const checkTimeout = 10 * time.Second

// Choose is the hook command for the nightwatch binary at nightwatch:
// the sibling nightwatch-hook when it is there and reports this build's
// ID, else `nightwatch hook` with a Note saying why. It runs the sibling
// once per path and process (each session of a night reuses the answer).
func Choose(ctx context.Context, nightwatch string) Choice {
	chosenMu.Lock()
	defer chosenMu.Unlock()
	if c, ok := chosen[nightwatch]; ok {
		return c
	}
	c := choose(ctx, nightwatch, Path(nightwatch))
	chosen[nightwatch] = c
	return c
}

// choose compares the two binaries' own answers, not the caller's: the
// question is whether the sibling is the hook `nightwatch hook` would be
// (a test process, or another build that starts a night with this binary,
// asks too).
func choose(ctx context.Context, nightwatch, sibling string) Choice {
	fallback := func(why string) Choice {
		return Choice{Argv: []string{nightwatch, "hook"},
			Note: fmt.Sprintf("%s; sessions get `%s hook` instead, the same hook in the whole binary (slower: it starts every package of nightwatch before each tool call). Build both: go build ./cmd/nightwatch ./cmd/nightwatch-hook", why, nightwatch)}
	}
	fi, err := os.Stat(sibling)
	if err != nil {
		return fallback(fmt.Sprintf("the hook executable %s is missing (%v)", sibling, err))
	}
	if !fi.Mode().IsRegular() {
		return fallback(fmt.Sprintf("the hook executable %s is not a regular file", sibling))
	}
	want, err := readID(ctx, nightwatch, "hook", IDFlag)
	if err != nil {
		return fallback(fmt.Sprintf("%s does not answer `hook %s`: %v", nightwatch, IDFlag, err))
	}
	got, err := readID(ctx, sibling, IDFlag)
	if err != nil {
		return fallback(fmt.Sprintf("the hook executable %s does not answer %s: %v", sibling, IDFlag, err))
	}
	if got != want {
		return fallback(fmt.Sprintf("the hook executable %s was built from other sources than %s (%q, not %q)", sibling, nightwatch, got, want))
	}
	return Choice{Argv: []string{sibling}, Dedicated: true}
}

func readID(ctx context.Context, path string, args ...string) (string, error) {
	// It reads nothing of ours (an empty environment), and an executable
	// that is not ours may print anything: 4 KiB of it is kept.
	res, err := proc.Run(ctx, proc.Spec{Argv: append([]string{path}, args...), Env: []string{},
		Timeout: checkTimeout, Grace: time.Second, MaxOutput: 4 << 10})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// HandoffEnv is set, for the `nightwatch hook` that nightwatch-hook hands
// a call to, to the ID of the nightwatch-hook that handed it on: the
// whole hook says so when its own ID differs (see Handoff).
const HandoffEnv = "NIGHTWATCH_HOOK_HANDOFF"

// handoffTimeout bounds the whole hook run for one call: a hold (at most
// healthcheck.MaxMaxHold) with its probes and reconnects, within the
// 600 s both supported CLIs give a hook.
const handoffTimeout = 10 * time.Minute

// Whole is the nightwatch binary beside the hook executable at hook (the
// reverse of Path).
func Whole(hook string) string { return WholeFor(hook, runtime.GOOS) }

// WholeFor is Whole for the platform goos.
func WholeFor(hook, goos string) string {
	dir := filepath.Dir(hook)
	if goos == "windows" {
		return filepath.Join(dir, "nightwatch.exe")
	}
	return filepath.Join(dir, "nightwatch")
}

// MaxKept bounds what nightwatch-hook keeps of a payload while its hot
// path reads it (Kept): a PostToolUse payload carries the tool's whole
// response, which may be any size.
const MaxKept = 1 << 20

// ErrPayloadTooLarge is what the hot path reads past MaxKept of a payload:
// it stops there, and the call is handed on.
var ErrPayloadTooLarge = errors.New("the hook's input is larger than the hot path reads; handed to the whole hook")

// Kept is a payload as nightwatch-hook's hot path reads it: every byte
// read is kept, for Handoff, up to MaxKept; past it the reads fail
// (ErrPayloadTooLarge), the hot path answers nothing, and the call is
// handed on whole as it streams (Payload: the bytes kept, then the rest,
// read from where the hot path stopped). However large the payload, no
// more than MaxKept of it is held.
type Kept struct {
	r    io.Reader
	kept bytes.Buffer
}

// NewKept reads the payload from r.
func NewKept(r io.Reader) *Kept { return &Kept{r: r} }

// Read reads the payload for the hot path.
func (k *Kept) Read(p []byte) (int, error) {
	room := MaxKept - k.kept.Len()
	if room <= 0 {
		return 0, ErrPayloadTooLarge
	}
	if len(p) > room {
		p = p[:room]
	}
	n, err := k.r.Read(p)
	k.kept.Write(p[:n])
	return n, err
}

// Payload is the whole payload, for Handoff: what the hot path read, then
// the rest, streamed.
func (k *Kept) Payload() io.Reader {
	return io.MultiReader(bytes.NewReader(k.kept.Bytes()), k.r)
}

// Handoff runs the whole hook, `nightwatch hook` beside this executable
// with the same arguments, for a call nightwatch-hook's hot path does not
// answer (a miss that probes, a trial, a hold, a failure, a log file):
// stdin is the whole payload, what it writes is written to stdout and
// stderr, and its exit code is returned. The two binaries were checked
// to be one build when the hook was injected (Choose); the child is told
// this one's ID, and says so if it is another. A whole hook that cannot
// be run lets the call through, saying why, as the hook does with a call
// it cannot judge. stdin is streamed to the child (Kept.Payload), never
// read whole here.
func Handoff(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "nightwatch: cannot find the whole hook (%v); the call goes ahead unchecked\n", err)
		return 0
	}
	whole := Whole(self)
	res, err := proc.Run(ctx, proc.Spec{
		Argv:    append([]string{whole, "hook"}, args...),
		Env:     append(os.Environ(), HandoffEnv+"="+ID()),
		Stdin:   stdin,
		Timeout: handoffTimeout,
	})
	_, _ = stdout.Write(res.Stdout)
	_, _ = stderr.Write(res.Stderr)
	if res.ExitCode < 0 {
		fmt.Fprintf(stderr, "nightwatch: the whole hook %s did not answer (%v); the call goes ahead unchecked\n", whole, err)
		return 0
	}
	return res.ExitCode
}

// CheckHandoff is what `nightwatch hook` says when nightwatch-hook handed
// it a call and the two are not one build (getenv reads HandoffEnv); ""
// when they are, or when no nightwatch-hook handed the call on.
func CheckHandoff(getenv func(string) (string, bool)) string {
	from, ok := getenv(HandoffEnv)
	if !ok || from == ID() {
		return ""
	}
	return fmt.Sprintf("nightwatch: the hook executable that handed this call on was built from other sources than this nightwatch (%q, not %q); rebuild both: go build ./cmd/nightwatch ./cmd/nightwatch-hook", from, ID())
}
