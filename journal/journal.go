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
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
)

// Journal is the append-only record of one run. It is what makes a run
// resumable: every line is fsynced before Append returns, so a line the
// supervisor acted on survives a crash or a power cut.
type Journal struct {
	Path  string
	RunID string
	// Repaired says what Open cut off (a torn last line); "" when
	// nothing. The supervisor logs it.
	Repaired string

	mu sync.Mutex // keeps lines in the order the supervisor produced them
}

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
	return &Journal{Path: path, RunID: runID}, nil
}

// Open reopens the journal of an unfinished run to resume it. A torn last
// line (the supervisor died inside a write, so the line was never
// acknowledged) is cut off first, because appending after it would turn it
// into a corrupt line in the middle of the file; Journal.Repaired says what
// was cut.
func Open(path string) (*Journal, error) {
	// Resuming cuts and appends: a planted symlink would have both done
	// to its target.
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open journal: %s is a symlink or not a regular file; refusing to resume through it", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	keep, warning, _ := scan(path, data, nil)
	if keep < len(data) {
		if err := os.Truncate(path, int64(keep)); err != nil {
			return nil, fmt.Errorf("open journal: cut the torn last line: %w", err)
		}
	}
	if keep > 0 && data[keep-1] != '\n' {
		// The last event is whole but its newline was lost.
		if err := atomicfile.AppendLine(path, nil); err != nil {
			return nil, fmt.Errorf("open journal: %w", err)
		}
	}
	j := &Journal{Path: path, RunID: statedir.RunID(path)}
	if warning != "" {
		j.Repaired = warning + "; cut it off before resuming"
	}
	return j, nil
}

// Append writes ev as one fsynced line. An empty Run or Time is stamped
// with the journal's run and the current time.
func (j *Journal) Append(ev Event) error {
	if ev.Type == "" {
		return errors.New("journal: event without a type")
	}
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
	if err := atomicfile.AppendLine(j.Path, line); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
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

// ReadWarnings is Read that also returns a warning for a torn last line.
func ReadWarnings(path string) (events []Event, warnings []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read journal: %w", err)
	}
	_, warning, err := scan(path, data, func(ev Event) { events = append(events, upgrade(ev)...) })
	if err != nil {
		return nil, nil, err
	}
	if warning != "" {
		warnings = append(warnings, warning)
	}
	return events, warnings, nil
}

// scan parses data line by line, handing each event to each (when not
// nil). keep is the length of the prefix that holds whole events: what
// remains after it is the torn tail, described by warning.
func scan(path string, data []byte, each func(Event)) (keep int, warning string, err error) {
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
		// A crash can leave NUL padding where a write was going: blank.
		if len(bytes.Trim(line, " \t\r\x00")) == 0 {
			if bytes.IndexByte(line, 0) < 0 {
				keep = next
			}
			off = next
			continue
		}
		ev, perr := parse(line)
		if perr != nil {
			if isLastLine(data[next:]) {
				return keep, fmt.Sprintf("journal %s:%d: ignored a torn last line (the supervisor stopped mid-write): %v", path, lineNo, perr), nil
			}
			return keep, "", fmt.Errorf("journal %s:%d: %w", path, lineNo, perr)
		}
		if each != nil {
			each(ev)
		}
		keep = next
		off = next
	}
	return keep, "", nil
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
	for _, p := range paths {
		evs, err := Read(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return "", nil, err
		}
		if len(evs) == 0 || evs[0].Type != RunStarted || evs[0].Batch != batchName {
			continue
		}
		runs = append(runs, run{p, evs[0].Time, evs})
	}
	if len(runs) == 0 {
		return "", nil, nil
	}
	// The run-started time orders runs; the file name (which starts with
	// the same time) breaks ties.
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].started.Equal(runs[j].started) {
			return runs[i].started.After(runs[j].started)
		}
		return runs[i].path > runs[j].path
	})
	newest := runs[0]
	for _, ev := range newest.events {
		if ev.Type == RunFinished {
			return "", nil, nil
		}
	}
	return newest.path, newest.events, nil
}
