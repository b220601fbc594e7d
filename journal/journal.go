package journal

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
)

// Journal is the append-only record of one run. It is what makes a run
// resumable: a line is fsynced before Append returns, or, written with
// AppendLater, before Sync returns, so a line the supervisor acted on
// survives a crash or a power cut.
type Journal struct {
	Path  string
	RunID string
	// Repaired says what Open cut off (a torn last line); "" when
	// nothing. The supervisor logs it.
	Repaired string
	// Warn, when set, hears what Append repaired on the way (a journal
	// deleted or replaced mid-run, written anew); the supervisor says it
	// loudly.
	Warn func(string)
	// Mirror, when set, gets every line after it is in the file: a
	// cluster's coordinator writes it to the shared journal table too. An
	// error makes Append fail as a broken journal does (the night starts
	// nothing more); the line stays in the file.
	Mirror func(ev Event) error

	mu sync.Mutex // keeps lines in the order the supervisor produced them
	// lines are every line of the run so far, in order: what a journal
	// deleted mid-run is written anew with.
	lines [][]byte
	// file is the identity of the journal file this Journal writes; a
	// different file (or none) at Path means it was deleted or replaced.
	file os.FileInfo
	// out is the journal file, kept open between lines (keepOpen) so a
	// line costs one os.Lstat of Path (ensureFile) and one write; nil
	// until the first line, and after Close or a repair.
	out *atomicfile.Appender
	// broken is the first failure to write Path: from then on every line
	// goes to the lost file (LostPath), in order, and Append fails.
	broken error
	lost   [][]byte
	// sinceSync are the lines written since the journal file was last
	// fsynced, in order; unsynced counts those that must be made durable
	// (lines of AppendLater; a volatile line alone needs no fsync). If
	// the journal breaks before they are durable, they go to the lost
	// file with the line that failed.
	sinceSync [][]byte
	unsynced  int
	// fsyncs counts the journal file's fsyncs (Fsyncs).
	fsyncs int
}

// syncFile fsyncs the open journal file; tests replace it to count fsyncs
// or to make one fail.
var syncFile = (*atomicfile.Appender).Sync

// keepOpen keeps the journal file open between lines. Not on Windows,
// where an open file cannot be deleted or renamed over: a journal kept
// open there would change what a cleaner or an operator can do to it
// mid-run.
const keepOpen = runtime.GOOS != "windows"

// MaxSize bounds a journal file nightwatch reads: a night of a 10 000-job
// batch with retries and server changes writes a few MiB; 256 MiB is far
// above that and still safe to hold in memory.
const MaxSize = 256 << 20

// ErrBroken is wrapped by Append's errors once the journal file could not
// be written: the run must start nothing more.
var ErrBroken = errors.New("the journal cannot be written")

// LostPath is the side file that keeps, in order, the lines of a run that
// could not be written to its journal at path. Read adds them after the
// journal's own lines and Open folds them back into the journal.
func LostPath(path string) string { return path + ".lost" }

// TornPath is the side file where Open sets aside torn text it cut from
// the journal at path, for the operator.
func TornPath(path string) string { return path + ".torn" }

// NewRunID names a run: its UTC start time, which sorts, and a few random
// hex digits so that two runs started in the same second never collide.
func NewRunID(now time.Time) string {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on linux or darwin; the nanoseconds
		// are a good enough tie-breaker if it ever does.
		return now.UTC().Format("20060102T150405Z") + fmt.Sprintf("-%04x", now.Nanosecond()&0xffff)
	}
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Create creates the journal of a new run in the state folder (folders
// 0700, file 0600). It refuses to reuse an existing file: a new run must
// never write into another's record.
func Create(stateDir, runID string) (*Journal, error) {
	if runID == "" || strings.ContainsAny(runID, `/\`) || runID == "." || runID == ".." {
		return nil, fmt.Errorf("create journal: invalid run id %q", runID)
	}
	if err := os.MkdirAll(statedir.Runs(stateDir), 0o700); err != nil {
		return nil, fmt.Errorf("create journal folder: %w", err)
	}
	path := statedir.Journal(stateDir, runID)
	if err := atomicfile.CreateNew(path); err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	return &Journal{Path: path, RunID: runID, file: fi}, nil
}

// Restore writes the journal of run runID anew from events (a cluster's
// shared journal, the truth when a coordinator on another host wrote it)
// and opens it to resume.
func Restore(stateDir, runID string, events []Event) (*Journal, error) {
	if runID == "" || strings.ContainsAny(runID, `/\`) || runID == "." || runID == ".." {
		return nil, fmt.Errorf("restore journal: invalid run id %q", runID)
	}
	if err := os.MkdirAll(statedir.Runs(stateDir), 0o700); err != nil {
		return nil, fmt.Errorf("restore journal folder: %w", err)
	}
	var lines [][]byte
	for _, ev := range events {
		line, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("restore journal: encode %s event: %w", ev.Type, err)
		}
		lines = append(lines, line)
	}
	path := statedir.Journal(stateDir, runID)
	if err := atomicfile.WriteFile(path, joinLines(lines), atomicfile.Mode); err != nil {
		return nil, fmt.Errorf("restore journal: %w", err)
	}
	return Open(path)
}

// Open reopens the journal of an unfinished run to resume it. Torn text
// (the supervisor died inside a write, so the line was never acknowledged,
// or a torn write had a later line glued to it) is cut from the journal and
// set aside in TornPath for the operator, because appending after it would
// turn it into a corrupt line in the middle of the file; lines kept in the
// lost file (LostPath) by a night whose journal could not be written are
// folded back in. Journal.Repaired says what was done.
func Open(path string) (*Journal, error) {
	// Resuming rewrites and appends: a planted symlink would have both
	// done to its target.
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open journal: %s is a symlink or not a regular file; refusing to resume through it", path)
	}
	data, err := atomicfile.Read(path, MaxSize)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	var lines [][]byte
	sc := scan(path, data)
	if sc.err != nil {
		return nil, sc.err
	}
	lines = append(lines, sc.lines...)
	var done []string
	if len(sc.torn) > 0 {
		if err := atomicfile.AppendLine(TornPath(path), bytes.Join(sc.torn, []byte("\n"))); err != nil {
			return nil, fmt.Errorf("open journal: set the torn text aside: %w", err)
		}
		done = append(done, fmt.Sprintf("%s; set aside in %s", strings.Join(sc.warnings, "; "), TornPath(path)))
	}
	lost, err := readLost(path)
	if err != nil {
		return nil, err
	}
	hadLost := len(lost.lines) > 0
	lost = afterJournal(lines, lost)
	if len(lost.lines) > 0 {
		lines = append(lines, lost.lines...)
		done = append(done, fmt.Sprintf("folded %d line(s) that a night could not write to the journal back in from %s", len(lost.lines), LostPath(path)))
	}
	if len(sc.torn) > 0 || len(lost.lines) > 0 || !bytes.Equal(joinLines(lines), data) {
		if err := atomicfile.WriteFile(path, joinLines(lines), atomicfile.Mode); err != nil {
			return nil, fmt.Errorf("open journal: %w", err)
		}
	}
	if hadLost {
		if err := os.Remove(LostPath(path)); err != nil {
			return nil, fmt.Errorf("open journal: %w", err)
		}
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	j := &Journal{Path: path, RunID: statedir.RunID(path), lines: lines, file: fi}
	j.Repaired = strings.Join(done, "; ")
	return j, nil
}

// joinLines is lines as a file: each ends with a newline.
func joinLines(lines [][]byte) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// volatile are the event types whose line is appended without an fsync
// (a later fsynced line makes it durable with it). A session-process line
// is read only to kill a session a dead night left running (resume); a
// crash of the machine, the only thing the fsync guards against, leaves no
// session running, and a crash of the night alone keeps the line in the
// kernel's cache (in a cluster the line also goes to the shared journal,
// as every line does). Every other line is fsynced before Append returns:
// resume folds them (a job started, how it ended).
var volatile = map[Type]bool{SessionProcess: true}

// Append writes ev as one line, fsynced unless its type is volatile (the
// fsync makes every line written before it durable too). An empty Run or
// Time is stamped with the journal's run and the current time. Every
// prose field is redacted first (Redacted), whoever built the event.
func (j *Journal) Append(ev Event) error { return j.append(ev, !volatile[ev.Type]) }

// AppendLater writes ev as one line as Append does, without the fsync: the
// line is in the file at once (readers see it; a crash of the writing
// process alone keeps it, in the kernel's cache), and it becomes durable,
// with every line written before it, at the next Sync or fsynced Append.
// The caller calls Sync before anything it does depends on the line
// surviving a crash of the machine: lines written together (a job's end
// and the next job's start) then cost one fsync instead of one each.
func (j *Journal) AppendLater(ev Event) error { return j.append(ev, false) }

// Sync makes every line written so far durable: one fsync of the journal
// file, none when no line written since the last one needs it. A journal
// deleted or replaced since is written anew first (Append's repair). A
// failed fsync breaks the journal as a failed Append does: the lines that
// may not be durable are kept, in order, in the lost file, and the error
// wraps ErrBroken.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil || j.unsynced == 0 {
		return nil
	}
	err := j.ensureFile()
	if err == nil {
		err = j.fsync()
	}
	j.release()
	if err == nil {
		return nil
	}
	j.broken = err
	return j.keepLost(nil, "lines written since the last fsync")
}

// Close closes the journal file, which the Journal keeps open between
// lines; a later line opens it again. The night closes it when it ends.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.closeOut()
}

func (j *Journal) closeOut() error {
	if j.out == nil {
		return nil
	}
	err := j.out.Close()
	j.out = nil
	return err
}

// release closes the journal file after a line or an fsync where it is
// not kept open (keepOpen).
func (j *Journal) release() {
	if !keepOpen {
		_ = j.closeOut()
	}
}

// Unsynced is how many lines written with AppendLater wait for the next
// Sync to be durable (volatile lines are not counted: they need none).
func (j *Journal) Unsynced() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.unsynced
}

// Fsyncs is how many times the journal file was fsynced by Append and
// Sync (a figure for the benchmarks and the tests of the night's fsyncs).
func (j *Journal) Fsyncs() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.fsyncs
}

// fsync makes every line written so far durable.
func (j *Journal) fsync() error {
	j.fsyncs++
	out, err := j.open()
	if err != nil {
		return err
	}
	if err := syncFile(out); err != nil {
		return err
	}
	j.sinceSync, j.unsynced = nil, 0
	return nil
}

func (j *Journal) append(ev Event, durable bool) error {
	if ev.Type == "" {
		return errors.New("journal: event without a type")
	}
	ev = Redacted(ev)
	if ev.Run == "" {
		ev.Run = j.RunID
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("journal %s: encode %s event: %w", j.Path, ev.Type, err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken == nil {
		written := false
		err := j.ensureFile()
		var out *atomicfile.Appender
		if err == nil {
			out, err = j.open()
		}
		if err == nil {
			err = out.AppendLine(line)
		}
		if err == nil {
			written = true
			j.lines = append(j.lines, line)
			j.sinceSync = append(j.sinceSync, line)
			if durable {
				err = j.fsync()
			} else if !volatile[ev.Type] {
				j.unsynced++
			}
		}
		j.release()
		if err == nil {
			if j.Mirror != nil {
				if err := j.Mirror(ev); err != nil {
					return fmt.Errorf("%w: the shared journal: the %s line is in %s only: %v", ErrBroken, ev.Type, j.Path, err)
				}
			}
			return nil
		}
		j.broken = err
		if written {
			// In the file, not made durable: kept with the lines before it.
			return j.keepLost(nil, "the "+string(ev.Type)+" line")
		}
	}
	return j.keepLost(line, "the "+string(ev.Type)+" line")
}

// keepLost keeps, in order, the lines written since the last fsync (they
// may not be durable) and line (nil: none) in the lost file, which Read
// and Open add back after the journal's own lines (afterJournal drops
// those the journal does hold), and returns the broken journal's error;
// what names the lines for it.
func (j *Journal) keepLost(line []byte, what string) error {
	j.lost = append(j.lost, j.sinceSync...)
	j.sinceSync, j.unsynced = nil, 0
	if line != nil {
		j.lost = append(j.lost, line)
	}
	lostPath := LostPath(j.Path)
	if err := atomicfile.WriteFile(lostPath, joinLines(j.lost), atomicfile.Mode); err != nil {
		return fmt.Errorf("%w: %s: %v; %s lost too (cannot keep it in %s: %v)", ErrBroken, j.Path, j.broken, what, lostPath, err)
	}
	return fmt.Errorf("%w: %s: %v; %s kept in %s", ErrBroken, j.Path, j.broken, what, lostPath)
}

// Redacted returns ev with every prose field passed through
// redact.String with everything the process remembered (internal/secrets):
// the reason (a session's stderr tail, a denial's text, a server's crash),
// the verify command's output, arguments and error, the result's terminal reason
// and what killed it. ev's own Verify and Result are not changed.
func Redacted(ev Event) Event {
	ev.Reason = redact.String(ev.Reason)
	if ev.Verify != nil {
		v := *ev.Verify
		v.Output = redact.String(v.Output)
		v.Err = redact.String(v.Err)
		if v.Command != nil {
			v.Command = make([]string, len(ev.Verify.Command))
			for i, a := range ev.Verify.Command {
				v.Command[i] = redact.String(a)
			}
		}
		ev.Verify = &v
	}
	if ev.Result != nil {
		r := *ev.Result
		r.TerminalReason = redact.String(r.TerminalReason)
		r.KilledBy = redact.String(r.KilledBy)
		ev.Result = &r
	}
	return ev
}

// Broken returns the failure that stopped the journal from being written,
// or nil.
func (j *Journal) Broken() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.broken
}

// ensureFile makes sure Path is still the file this Journal writes. A
// journal deleted or replaced mid-run (by hand, by a cleaner) would
// otherwise be recreated by the next append without its run-started line
// and without the jobs that finished: the file is written anew with every
// line of the run so far, and Warn says so.
func (j *Journal) ensureFile() error {
	fi, err := os.Lstat(j.Path)
	if err == nil && j.file != nil && os.SameFile(fi, j.file) {
		return nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// What is open is no longer the journal: the next line opens the one
	// written anew.
	_ = j.closeOut()
	what := "was deleted"
	if err == nil {
		what = "was replaced by another file (" + fi.Mode().Type().String() + ")"
		if fi.IsDir() {
			return fmt.Errorf("%s %s: a folder is in its place", j.Path, what)
		}
	}
	if err := atomicfile.WriteFile(j.Path, joinLines(j.lines), atomicfile.Mode); err != nil {
		return fmt.Errorf("the journal %s; writing it anew failed: %w", what, err)
	}
	nfi, err := os.Lstat(j.Path)
	if err != nil {
		return err
	}
	j.file = nfi
	if j.Warn != nil {
		j.Warn(fmt.Sprintf("the journal %s %s during the run; wrote it anew with the run's %d line(s) so far", j.Path, what, len(j.lines)))
	}
	return nil
}

// open is the journal file, open to append to: the one ensureFile
// checked (its identity is j.file). A file put at Path between that check
// and this open is not written: an error, which breaks the journal.
func (j *Journal) open() (*atomicfile.Appender, error) {
	if j.out != nil {
		return j.out, nil
	}
	out, err := atomicfile.OpenAppender(j.Path)
	if err != nil {
		return nil, err
	}
	if j.file != nil && !os.SameFile(out.Info(), j.file) {
		_ = out.Close()
		return nil, fmt.Errorf("the journal %s was replaced by another file while it was being opened", j.Path)
	}
	j.out = out
	return out, nil
}

// Read reads every event of a journal. A torn last line (the supervisor
// died mid-write) is not an error: it is left out; use ReadWarnings to hear
// about it, or Open, which reports and cuts it when the run resumes. Any
// other line that does not parse is an error naming path:line, because
// events after it may not be trusted.
func Read(path string) ([]Event, error) {
	events, _, err := ReadWarnings(path)
	return events, err
}

// ReadWarnings is Read that also returns warnings: torn text left out,
// lines added from the lost file.
func ReadWarnings(path string) (events []Event, warnings []string, err error) {
	data, err := atomicfile.Read(path, MaxSize)
	if err != nil {
		return nil, nil, fmt.Errorf("read journal: %w", err)
	}
	sc := scan(path, data)
	if sc.err != nil {
		return nil, nil, sc.err
	}
	lost, err := readLost(path)
	if err != nil {
		return nil, nil, err
	}
	lost = afterJournal(sc.lines, lost)
	for _, ev := range append(sc.events, lost.events...) {
		events = append(events, upgrade(ev)...)
	}
	warnings = append(warnings, sc.warnings...)
	if len(lost.lines) > 0 {
		warnings = append(warnings, fmt.Sprintf("journal %s could not be written during the run: %d line(s) were read from %s", path, len(lost.lines), LostPath(path)))
	}
	warnings = append(warnings, lost.warnings...)
	return events, warnings, nil
}

// readLost reads the lost file of the journal at path; none is no lines.
func readLost(path string) (scanned, error) {
	data, err := atomicfile.Read(LostPath(path), MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return scanned{}, nil
	}
	if err != nil {
		return scanned{}, fmt.Errorf("read journal: %w", err)
	}
	sc := scan(LostPath(path), data)
	return sc, sc.err
}

// afterJournal drops from the lost lines those the journal holds already:
// lines written to the journal whose fsync failed (or was never done) were
// kept in both, so the lost file starts with the journal's last lines
// (all of them, or the first few when the machine crashed before the rest
// reached the disk).
func afterJournal(journal [][]byte, lost scanned) scanned {
	for n := min(len(journal), len(lost.lines)); n > 0; n-- {
		if slices.EqualFunc(journal[len(journal)-n:], lost.lines[:n], bytes.Equal) {
			lost.lines, lost.events = lost.lines[n:], lost.events[n:]
			return lost
		}
	}
	return lost
}

// scanned is what scan found: the whole events and their lines, in order,
// and the torn text left out.
type scanned struct {
	events   []Event
	lines    [][]byte
	torn     [][]byte
	warnings []string
	err      error
}

// scan parses data line by line. Torn text is left out with a warning: a
// last line that does not parse (the supervisor stopped mid-write), or the
// torn start of a line that a later whole event was glued to (a write that
// failed half-way, then the next one). Any other line that does not parse
// is an error naming path:line, because events after it may not be
// trusted.
func scan(path string, data []byte) (sc scanned) {
	lineNo := 0
	for off := 0; off < len(data); {
		lineNo++
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
			end = off + end
		} else {
			end = len(data)
		}
		line := data[off:end]
		off = next
		// A crash can leave NUL padding where a write was going: blank.
		if len(bytes.Trim(line, " \t\r\x00")) == 0 {
			continue
		}
		line = bytes.TrimRight(line, "\r")
		ev, perr := parse(line)
		if perr == nil {
			sc.events = append(sc.events, ev)
			sc.lines = append(sc.lines, line)
			continue
		}
		if i := gluedAt(line); i > 0 {
			ev, _ := parse(line[i:])
			sc.torn = append(sc.torn, line[:i])
			sc.warnings = append(sc.warnings, fmt.Sprintf("journal %s:%d: left out torn text that a later event was glued to (a write failed half-way)", path, lineNo))
			sc.events = append(sc.events, ev)
			sc.lines = append(sc.lines, line[i:])
			continue
		}
		if isLastLine(data[next:]) {
			sc.torn = append(sc.torn, bytes.Trim(line, "\x00"))
			sc.warnings = append(sc.warnings, fmt.Sprintf("journal %s:%d: ignored a torn last line (the supervisor stopped mid-write): %v", path, lineNo, perr))
			return sc
		}
		sc.err = fmt.Errorf("journal %s:%d: %w", path, lineNo, perr)
		return sc
	}
	return sc
}

// gluedAt finds a whole event at the end of a line that does not parse:
// the index where it starts, or -1.
func gluedAt(line []byte) int {
	for i := bytes.LastIndex(line, []byte(`{"`)); i > 0; i = bytes.LastIndex(line[:i], []byte(`{"`)) {
		if _, err := parse(line[i:]); err == nil {
			return i
		}
	}
	return -1
}

// isLastLine reports whether rest (what follows a line) holds nothing but
// blank space or NUL padding.
func isLastLine(rest []byte) bool {
	return len(bytes.Trim(rest, " \t\r\n\x00")) == 0
}

func parse(line []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return Event{}, fmt.Errorf("not a JSON event: %w", err)
	}
	if ev.Type == "" {
		return Event{}, errors.New("event has no type")
	}
	return ev, nil
}

// Latest returns the newest journal of the state folder. Run ids start
// with their UTC start time, so the greatest name is the newest run.
func Latest(stateDir string) (string, error) {
	paths, err := filepath.Glob(statedir.Journals(stateDir))
	if err != nil {
		return "", fmt.Errorf("list journals: %w", err)
	}
	if len(paths) == 0 {
		return "", fmt.Errorf("no run journal in %s: %w", statedir.Runs(stateDir), fs.ErrNotExist)
	}
	sort.Strings(paths)
	return paths[len(paths)-1], nil
}

// LatestUnfinished finds the run of batch to resume: the newest run of this
// batch (the batch named in its run-started line), if that run has no
// run-finished line. When the newest run finished there is nothing to
// resume, even if an older run was abandoned: resuming a night older than
// the last completed one would redo stale work. It returns "" when there is
// nothing to resume. Torn last lines are tolerated; Open reports them when
// the run is resumed.
func LatestUnfinished(stateDir, batchName string) (path string, events []Event, err error) {
	paths, err := filepath.Glob(statedir.Journals(stateDir))
	if err != nil {
		return "", nil, fmt.Errorf("list journals: %w", err)
	}
	type run struct {
		path    string
		started time.Time
		events  []Event
	}
	var runs []run
	type damaged struct {
		path string
		err  error
	}
	var bad []damaged
	for _, p := range paths {
		evs, err := Read(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			// Another batch's damaged journal is not this batch's
			// business; one that may be this batch's matters only if no
			// newer run of the batch exists (decided below).
			if first, ok := firstEvent(p); ok && first.Type == RunStarted && first.Batch != batchName {
				continue
			}
			bad = append(bad, damaged{p, err})
			continue
		}
		if len(evs) == 0 || evs[0].Type != RunStarted || evs[0].Batch != batchName {
			continue
		}
		runs = append(runs, run{p, evs[0].Time, evs})
	}
	// The run-started time orders runs; the file name (which starts with
	// the same time) breaks ties.
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].started.Equal(runs[j].started) {
			return runs[i].started.After(runs[j].started)
		}
		return runs[i].path > runs[j].path
	})
	// A damaged journal that may be this batch's blocks the resume only if
	// it could be the newest run: an older one cannot be resumed anyway.
	for _, d := range bad {
		if len(runs) == 0 || filepath.Base(d.path) > filepath.Base(runs[0].path) {
			return "", nil, d.err
		}
	}
	if len(runs) == 0 {
		return "", nil, nil
	}
	newest := runs[0]
	for _, ev := range newest.events {
		if ev.Type == RunFinished || ev.Type == RunClosed {
			return "", nil, nil
		}
	}
	return newest.path, newest.events, nil
}

// firstEvent is the first line of the journal at path, if it parses.
func firstEvent(path string) (Event, bool) {
	data, err := atomicfile.Read(path, MaxSize)
	if err != nil {
		return Event{}, false
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	}
	ev, err := parse(bytes.TrimRight(data, "\r"))
	return ev, err == nil
}

// NewestOf is the journal of batchName's newest run in the state folder,
// finished or not (its run-started line names the batch), for a view of
// the night; "" when the batch has no run there.
func NewestOf(stateDir, batchName string) (string, error) {
	paths, err := filepath.Glob(statedir.Journals(stateDir))
	if err != nil {
		return "", fmt.Errorf("list journals: %w", err)
	}
	// Run ids start with their start time: the greatest name is the
	// newest run.
	sort.Sort(sort.Reverse(sort.StringSlice(paths)))
	for _, p := range paths {
		if first, ok := firstEvent(p); ok && first.Type == RunStarted && first.Batch == batchName {
			return p, nil
		}
	}
	return "", nil
}

// Ended reports whether events close their run (run-finished or
// run-closed), and when.
func Ended(events []Event) (time.Time, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		if t := events[i].Type; t == RunFinished || t == RunClosed {
			return events[i].Time, true
		}
	}
	return time.Time{}, false
}
