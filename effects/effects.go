// Package effects is a job's side-effect ledger: the calls to tools that
// are not read-only which succeeded in the job's attempts of one night, so
// that a retry or a resume is told what was already done and an exact
// repeat of such a call in a later attempt is refused instead of doing the
// work twice. The supervisor creates a job's ledger, with what the
// servers' tools/list said of each tool (read-only or not), before each
// attempt; the attempt's hooks read it before a call and add to it after a
// call that succeeded. One small file per job, written whole through
// internal/atomicfile under a file lock (parallel hooks of one session add
// to it at once), owner-only.
package effects

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// The variables a session (and so each of its hooks) gets when its job
// keeps a ledger. A path and a number, never a secret.
const (
	// PathEnv is the job's ledger file.
	PathEnv = "NIGHTWATCH_EFFECTS"
	// AttemptEnv is the attempt the session runs (1-based).
	AttemptEnv = "NIGHTWATCH_EFFECTS_ATTEMPT"
)

// FileName is the ledger's name in the job's folder of the run.
const FileName = "effects.json"

// version is the file's format; a file of another version is refused.
const version = 1

// maxFile bounds what is read: a ledger holds digests, never inputs.
const maxFile = 4 << 20

// maxCalls bounds the calls one ledger keeps; past it, calls are still
// allowed but no longer recorded (the file says so).
const maxCalls = 2000

// DigestLen bounds the redacted text of a call's input kept for people
// (the prompt, the journal, the report).
const DigestLen = 120

// Hints are what a server's tools/list says of one tool (MCP tool
// annotations); nil fields were not given.
type Hints struct {
	ReadOnly    *bool `json:"readOnly,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty"`
}

// IsReadOnly says whether a call to the tool changes nothing: only a
// readOnlyHint of true says so. Without hints a tool counts as having side
// effects.
func (h Hints) IsReadOnly() bool { return h.ReadOnly != nil && *h.ReadOnly }

// CanRepeat says whether a call to the tool may simply be made again
// after it was interrupted with its server: a read-only tool, or one whose
// idempotentHint is true. Without hints it may not (the MCP default of
// idempotentHint is false).
func (h Hints) CanRepeat() bool {
	return h.IsReadOnly() || h.Idempotent != nil && *h.Idempotent
}

// Interrupted is what the model reads of a call to the tool that was
// interrupted with its server (its effect unknown), as the end of a
// sentence: whether it can simply be made again. The one wording of it:
// exec-server's error for a call in flight when its server died and the
// hook's added context after a failed call both end with it.
func (h Hints) Interrupted() string {
	if h.CanRepeat() {
		return "the call can be made again"
	}
	return "it may have taken effect: check before repeating it"
}

// HintsOf is server's tool's hints in the ledger (none when unknown).
func (l *Ledger) HintsOf(server, tool string) Hints {
	if l == nil {
		return Hints{}
	}
	return l.Tools[server][tool]
}

// HintsFrom reads server's tool's hints from the ledger the environment
// names (PathEnv); none outside a job that keeps one, or when it cannot
// be read.
func HintsFrom(getenv func(string) (string, bool), server, tool string) Hints {
	path, _ := getenv(PathEnv)
	if strings.TrimSpace(path) == "" {
		return Hints{}
	}
	l, err := Read(path)
	if err != nil {
		return Hints{}
	}
	return l.HintsOf(server, tool)
}

// Call is one successful call to a tool that is not read-only.
type Call struct {
	// N numbers the job's calls from 1, in the order recorded.
	N       int       `json:"n"`
	Attempt int       `json:"attempt"`
	Server  string    `json:"server"`
	Tool    string    `json:"tool"`
	Key     string    `json:"key"`    // the input's canonical digest (Key)
	Digest  string    `json:"digest"` // a short redacted text of the input
	At      time.Time `json:"at"`
}

// Name is the tool as the model calls it.
func (c Call) Name() string { return "mcp__" + c.Server + "__" + c.Tool }

// Ledger is the file's content.
type Ledger struct {
	Version int `json:"version"`
	// AllowRepeat: the job's side_effects setting lets a later attempt
	// repeat a call; it is still recorded and told.
	AllowRepeat bool `json:"allowRepeat,omitempty"`
	// Tools are the hints by server, then tool.
	Tools map[string]map[string]Hints `json:"tools,omitempty"`
	Calls []Call                      `json:"calls,omitempty"`
	// Full: maxCalls were recorded and later ones were not.
	Full bool `json:"full,omitempty"`
	// Tasks are the calls a server turned into an MCP task that the CLI
	// could not follow: the work runs on at the server, unseen.
	Tasks []Task `json:"tasks,omitempty"`
}

// Task is a call a server answered with an MCP task nobody follows.
type Task struct {
	N       int    `json:"n"`
	Attempt int    `json:"attempt"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	// ID is the server's task id and ToolUseID the CLI's id of the call,
	// when whoever recorded it knew them ("" otherwise).
	ID        string    `json:"id,omitempty"`
	ToolUseID string    `json:"toolUseId,omitempty"`
	At        time.Time `json:"at"`
}

// TaskRef names a task call as far as its witness knows it: the server's
// task id (exec-server reads it in the answer) and the CLI's tool_use_id.
type TaskRef struct {
	ID, ToolUseID string
}

// Name is the tool as the model calls it.
func (t Task) Name() string { return "mcp__" + t.Server + "__" + t.Tool }

// TasksOf are the tasks attempt left running.
func (l *Ledger) TasksOf(attempt int) []Task {
	if l == nil {
		return nil
	}
	var out []Task
	for _, t := range l.Tasks {
		if t.Attempt == attempt {
			out = append(out, t)
		}
	}
	return out
}

// RecordTask adds a call of attempt that server turned into a task the
// CLI could not follow. One call has two witnesses on some CLIs (the
// server's answer, read by exec-server, and the CLI's failure, read by the
// hook): a call already recorded under the same tool_use_id is recorded
// once, with what the second witness adds (the task id).
func RecordTask(path string, attempt int, server, tool string, ref TaskRef, now time.Time) error {
	return update(path, func(l *Ledger) bool {
		if ref.ToolUseID != "" {
			for i := range l.Tasks {
				t := &l.Tasks[i]
				if t.ToolUseID != ref.ToolUseID || t.Server != server || t.Tool != tool {
					continue
				}
				if t.ID == "" && ref.ID != "" {
					t.ID = ref.ID
					return true
				}
				return false
			}
		}
		if len(l.Tasks) >= maxCalls {
			return false
		}
		l.Tasks = append(l.Tasks, Task{N: len(l.Tasks) + 1, Attempt: attempt, Server: server, Tool: tool,
			ID: ref.ID, ToolUseID: ref.ToolUseID, At: now.UTC()})
		return true
	})
}

// TaskOf is the task recorded for the call toolUseID; nil when none.
func (l *Ledger) TaskOf(toolUseID string) *Task {
	if l == nil || toolUseID == "" {
		return nil
	}
	for i := range l.Tasks {
		if l.Tasks[i].ToolUseID == toolUseID {
			return &l.Tasks[i]
		}
	}
	return nil
}

// SessionLedger is the ledger and attempt a session's environment names
// (PathEnv, AttemptEnv); ok is false when it names none.
func SessionLedger(getenv func(string) (string, bool)) (path string, attempt int, ok bool) {
	path, _ = getenv(PathEnv)
	a, _ := getenv(AttemptEnv)
	attempt, err := strconv.Atoi(strings.TrimSpace(a))
	if strings.TrimSpace(path) == "" || err != nil || attempt <= 0 {
		return "", 0, false
	}
	return path, attempt, true
}

// ReadOnly says whether server's tool is read-only by its hints.
func (l *Ledger) ReadOnly(server, tool string) bool {
	return l.HintsOf(server, tool).IsReadOnly()
}

// Earlier is the call of an attempt before attempt with the same server,
// tool and input key; nil when none.
func (l *Ledger) Earlier(attempt int, server, tool, key string) *Call {
	if l == nil {
		return nil
	}
	for i := range l.Calls {
		c := &l.Calls[i]
		if c.Attempt < attempt && c.Server == server && c.Tool == tool && c.Key == key {
			return c
		}
	}
	return nil
}

// Before are the calls of attempts before attempt, in order.
func (l *Ledger) Before(attempt int) []Call {
	if l == nil {
		return nil
	}
	var out []Call
	for _, c := range l.Calls {
		if c.Attempt < attempt {
			out = append(out, c)
		}
	}
	return out
}

// ErrBadFile says a ledger file is not one this release wrote.
var ErrBadFile = errors.New("not a side-effect ledger")

// Read reads the ledger at path. A missing file is an empty ledger; a
// file that is not a regular file, is too large or does not parse as a
// ledger of this version is refused.
func Read(path string) (*Ledger, error) {
	data, err := atomicfile.Read(path, maxFile)
	if errors.Is(err, os.ErrNotExist) {
		return &Ledger{Version: version}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the side-effect ledger %s: %w", path, err)
	}
	var l Ledger
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("side-effect ledger %s: %w: %v", path, ErrBadFile, err)
	}
	if l.Version != version {
		return nil, fmt.Errorf("side-effect ledger %s: %w: version %d, want %d", path, ErrBadFile, l.Version, version)
	}
	for _, c := range l.Calls {
		if c.N <= 0 || c.Attempt <= 0 || c.Server == "" || c.Tool == "" || c.Key == "" {
			return nil, fmt.Errorf("side-effect ledger %s: %w: call %d is incomplete", path, ErrBadFile, c.N)
		}
	}
	for _, t := range l.Tasks {
		if t.N <= 0 || t.Attempt <= 0 || t.Server == "" || t.Tool == "" {
			return nil, fmt.Errorf("side-effect ledger %s: %w: task %d is incomplete", path, ErrBadFile, t.N)
		}
	}
	return &l, nil
}

// lockWait bounds how long a hook waits for another hook's update.
const lockWait = 10 * time.Second

// update changes the ledger at path under its lock and writes it whole.
func update(path string, change func(*Ledger) bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("side-effect ledger folder: %w", err)
	}
	lockPath := path + ".lock"
	if err := atomicfile.EnsureFile(lockPath); err != nil {
		return fmt.Errorf("side-effect ledger lock: %w", err)
	}
	lk := flock.New(lockPath)
	deadline := time.Now().Add(lockWait)
	for {
		ok, err := lk.TryLock()
		if err != nil {
			return fmt.Errorf("side-effect ledger lock: %w", err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("side-effect ledger %s: another hook held its lock for %s", path, lockWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	defer func() { _ = lk.Unlock() }()
	l, err := Read(path)
	if err != nil {
		return err
	}
	if !change(l) {
		return nil
	}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("side-effect ledger: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(data, '\n'), atomicfile.Mode); err != nil {
		return fmt.Errorf("write the side-effect ledger: %w", err)
	}
	return nil
}

// Prepare sets the ledger's tool hints and repeat setting before an
// attempt, keeping the calls already recorded. Hints of servers not in
// tools are kept (a server the night could not list this time).
func Prepare(path string, tools map[string]map[string]Hints, allowRepeat bool) error {
	// A ledger that already says all this is not written again: the
	// write is two fsyncs before every attempt.
	change := func(l *Ledger) bool {
		changed := l.AllowRepeat != allowRepeat
		l.AllowRepeat = allowRepeat
		for srv, ts := range tools {
			if l.Tools == nil {
				l.Tools = map[string]map[string]Hints{}
			}
			if !reflect.DeepEqual(l.Tools[srv], ts) {
				l.Tools[srv] = ts
				changed = true
			}
		}
		return changed
	}
	// Nor is it locked, nor its folder made, to find that out (a job
	// without servers on its first attempt: no ledger, which reads as
	// empty): the ledger is only ever replaced whole, so a read without
	// the lock sees a whole file, and what Prepare sets (the hints and
	// the repeat setting) only Prepare changes, before an attempt, by
	// the one night that runs the job.
	if l, err := Read(path); err == nil && !change(l) {
		return nil
	}
	return update(path, change)
}

// Input is a call's input: its raw JSON, or only its key when it was too
// large to keep (Raw nil, Key set).
type Input struct {
	Raw []byte
	Key string
}

// Record adds a successful call of attempt to server's tool unless the
// tool is read-only. It returns the call as recorded (nil when not
// recorded). secrets are redacted from its digest.
func Record(path string, attempt int, server, tool string, in Input, now time.Time, secrets ...string) (*Call, error) {
	key, digest := in.Key, "(an input too large to show)"
	if key == "" {
		key, digest = Key(in.Raw), Digest(in.Raw, secrets...)
	}
	var rec *Call
	err := update(path, func(l *Ledger) bool {
		if l.ReadOnly(server, tool) {
			return false
		}
		if len(l.Calls) >= maxCalls {
			changed := !l.Full
			l.Full = true
			return changed
		}
		c := Call{N: len(l.Calls) + 1, Attempt: attempt, Server: server, Tool: tool, Key: key, Digest: digest, At: now.UTC()}
		l.Calls = append(l.Calls, c)
		rec = &c
		return true
	})
	return rec, err
}

// Key is the digest of a call's input as canonical JSON (objects' keys
// sorted, no insignificant space, numbers as written): two inputs with
// the same key are the same call. An input that is not JSON is keyed by
// its bytes.
func Key(input []byte) string {
	canon, err := Canonical(input)
	if err != nil {
		sum := sha256.Sum256(input)
		return "raw:" + hex.EncodeToString(sum[:16])
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:16])
}

// Canonical is input as canonical JSON: objects' keys sorted, no
// insignificant space, numbers as written, strings re-escaped the one
// way encoding/json writes them. An empty input is the empty object.
func Canonical(input []byte) ([]byte, error) {
	if len(bytes.TrimSpace(input)) == 0 {
		return []byte("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Digest is a short, redacted, one-line text of a call's input, for the
// prompt, the journal and the report: the model wrote it and it may carry
// what a server or a page gave it, so known secrets and anything that
// looks like a credential are masked.
func Digest(input []byte, secrets ...string) string {
	s := string(input)
	if canon, err := Canonical(input); err == nil {
		s = string(canon)
	}
	return text.OneLine(redact.String(s, secrets...), DigestLen)
}

// Told is what a later attempt's prompt says of the calls that succeeded
// before it: nightwatch's words, the tool names and the redacted digests.
// "" when there are none.
func Told(l *Ledger, attempt int) string {
	calls := l.Before(attempt)
	if len(calls) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("nightwatch: earlier attempts of this job already made these calls, and they succeeded; their effects stand. ")
	if l.AllowRepeat {
		b.WriteString("Do not repeat one unless the task needs it done again:\n")
	} else {
		b.WriteString("Do not repeat them: an identical call is refused. Check their effect with a read-only tool if you need to, then go on with what is left:\n")
	}
	for _, c := range calls {
		fmt.Fprintf(&b, "- %s %s (attempt %d)\n", c.Name(), c.Digest, c.Attempt)
	}
	return strings.TrimRight(b.String(), "\n")
}

// DenyReason is what the model reads when a call repeats c.
func DenyReason(c *Call) string {
	return fmt.Sprintf("nightwatch: this exact call (%s with the same input) already succeeded in attempt %d of this job; "+
		"it is not made again, so its effect does not happen twice. Do not retry it: treat it as done "+
		"(check its effect with a read-only tool if you need its result) and go on with the rest of the task.",
		c.Name(), c.Attempt)
}

// Servers lists the servers with recorded calls, sorted (for tests and
// messages).
func (l *Ledger) Servers() []string {
	var out []string
	for _, c := range l.Calls {
		if !slices.Contains(out, c.Server) {
			out = append(out, c.Server)
		}
	}
	slices.Sort(out)
	return out
}

// Of are the calls attempt made, in order.
func (l *Ledger) Of(attempt int) []Call {
	if l == nil {
		return nil
	}
	var out []Call
	for _, c := range l.Calls {
		if c.Attempt == attempt {
			out = append(out, c)
		}
	}
	return out
}

// Same says whether a and b are one call as two ledgers hold it (each
// numbers its calls its own way): the same attempt, tool and input, made
// at the same microsecond (what a database keeps of a time).
func Same(a, b Call) bool {
	return a.Attempt == b.Attempt && a.Server == b.Server && a.Tool == b.Tool && a.Key == b.Key &&
		a.At.Truncate(time.Microsecond).Equal(b.At.Truncate(time.Microsecond))
}

// Merge adds to the ledger at path the calls it does not hold yet (Same),
// ordered by attempt and time, each numbered after the ledger's last: a
// cluster's shared ledger brought into a host's file, so that the host's
// hooks refuse a repeat of a call made on another host. It returns how
// many it added.
func Merge(path string, calls []Call) (int, error) {
	if len(calls) == 0 {
		return 0, nil
	}
	in := slices.Clone(calls)
	slices.SortStableFunc(in, func(a, b Call) int {
		if a.Attempt != b.Attempt {
			return a.Attempt - b.Attempt
		}
		return a.At.Compare(b.At)
	})
	added := 0
	err := update(path, func(l *Ledger) bool {
		added = 0
		for _, c := range in {
			if c.Attempt <= 0 || c.Server == "" || c.Tool == "" || c.Key == "" {
				continue
			}
			if slices.ContainsFunc(l.Calls, func(h Call) bool { return Same(h, c) }) {
				continue
			}
			if len(l.Calls) >= maxCalls {
				l.Full = true
				break
			}
			c.N = len(l.Calls) + 1
			c.At = c.At.UTC()
			l.Calls = append(l.Calls, c)
			added++
		}
		return added > 0
	})
	return added, err
}
