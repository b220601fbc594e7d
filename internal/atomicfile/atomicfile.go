// Package atomicfile writes the files nightwatch owns (cache, journal
// snapshots, generated session files) so that a reader never sees half a
// file and a crash never leaves one behind.
package atomicfile

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Mode is the permission every state file gets: the cache and journal hold
// server names, error texts and timings that are nobody else's business.
const Mode os.FileMode = 0o600

// WriteFile replaces path with data: it writes a temp file in the same
// folder, fsyncs it, renames it over path and fsyncs the folder. A symlink
// at path is refused rather than followed, so a planted link cannot redirect
// nightwatch's writes to another file.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, true)
}

// WriteFileVolatile is WriteFile without the fsyncs, for a file written
// again before every use (a session's settings and MCP config): a reader
// still never sees half a file and a symlink is still refused, but after
// a crash the file may be missing or empty, which its writer's next run
// does not mind. Two fsyncs (file and folder) are tens of milliseconds
// on a busy disk.
func WriteFileVolatile(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, false)
}

func write(path string, data []byte, perm os.FileMode, durable bool) error {
	if fi, err := os.Lstat(path); err == nil && linkLike(fi.Mode()) {
		return fmt.Errorf("write %s: refusing to replace a symlink (or a junction)", path)
	}
	dir := filepath.Dir(path)
	tmp, err := createTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("write %s: fsync: %w", path, err)
		}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := restrict(tmpName, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := rename(tmpName, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	if durable {
		syncDir(dir)
	}
	return nil
}

// createTemp creates a new file in dir named prefix and a random number,
// as os.CreateTemp does, opened with O_NONBLOCK (a regular file ignores
// it; Go then asks the kernel once whether it can poll the file, instead
// of switching it to non-blocking and back: four fcntls less) and never
// through a symlink.
func createTemp(dir, prefix string) (*os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow|nonBlock, 0o600)
		if os.IsExist(err) && try < 10000 {
			continue
		}
		return f, err
	}
}

// AppendLine appends one line to path (created 0600 if missing) with a
// single write call, so concurrent appenders never interleave inside a line,
// and fsyncs it: a journal line that was reported written survives a crash.
func AppendLine(path string, line []byte) error {
	return appendLine(path, line, true)
}

// AppendLineVolatile is AppendLine without the fsync, for a line whose
// loss in a crash of the machine costs nothing (journal.Append says which).
// A crash of the writing process alone loses nothing: the line is in the
// kernel's cache once the write returns.
func AppendLineVolatile(path string, line []byte) error {
	return appendLine(path, line, false)
}

func appendLine(path string, line []byte, durable bool) error {
	a, err := OpenAppender(path)
	if err != nil {
		return err
	}
	err = a.AppendLine(line)
	if err == nil && durable {
		err = a.Sync()
	}
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	return err
}

// Appender is a file kept open to append lines to (a run's journal, for
// the whole night): opened as AppendLine opens its file (created 0600,
// never through a symlink, never waiting on a FIFO, a file that is not
// regular refused), then each line costs one write and no open. What it
// writes goes to the file it opened, whatever is put at its path later:
// Info is that file's identity, for its owner to compare with what the
// path names now (os.SameFile with an os.Lstat of it) before it writes.
type Appender struct {
	path string
	f    *os.File
	info os.FileInfo
}

// OpenAppender opens path to append lines to, as AppendLine does.
func OpenAppender(path string) (*Appender, error) {
	f, fi, err := openAppendInfo(path)
	if err != nil {
		return nil, fmt.Errorf("append %s: %w", path, err)
	}
	return &Appender{path: path, f: f, info: fi}, nil
}

// Info is the identity of the open file (its fstat when opened).
func (a *Appender) Info() os.FileInfo { return a.info }

// AppendLine appends line (a newline added if it has none) with a single
// write call, so concurrent appenders never interleave inside a line. It
// is not fsynced: see Sync.
func (a *Appender) AppendLine(line []byte) error {
	buf := make([]byte, 0, len(line)+1)
	buf = append(buf, line...)
	if len(buf) == 0 || buf[len(buf)-1] != '\n' {
		buf = append(buf, '\n')
	}
	if _, err := a.f.Write(buf); err != nil {
		return fmt.Errorf("append %s: %w", a.path, err)
	}
	return nil
}

// Sync makes every line appended to the open file durable: one fsync.
func (a *Appender) Sync() error {
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("append %s: fsync: %w", a.path, err)
	}
	return nil
}

// Close closes the file.
func (a *Appender) Close() error {
	if err := a.f.Close(); err != nil {
		return fmt.Errorf("append %s: %w", a.path, err)
	}
	return nil
}

// Sync makes what was appended to path with AppendLineVolatile durable:
// one fsync of the file, which covers every line written to it before.
// A writer that appends several lines and needs them all to survive a
// crash of the machine before it acts on them pays one fsync instead of
// one per line (journal.Sync). Never through a symlink; a missing file
// is an error, not created.
func Sync(path string) error {
	if fi, err := os.Lstat(path); err == nil && linkLike(fi.Mode()) {
		return fmt.Errorf("fsync %s: refusing to open a symlink (or a junction)", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|noFollow|nonBlock, 0)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	// Not every filesystem supports fsync on a directory; the rename is
	// already done, so a failure here only weakens crash durability.
	_ = d.Sync()
	_ = d.Close()
}

// OpenLog opens a log that a running process streams into (a session's
// stream and stderr, the night's log): appended to, created 0600, never
// through a symlink. A log cannot be written atomically; its reader
// tolerates a torn last line.
func OpenLog(path string) (*os.File, error) {
	if path == "" {
		return nil, fmt.Errorf("open log: no path")
	}
	f, err := openAppend(path)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// openAppend opens path for appending (created 0600), never through a
// symlink and never waiting: O_NONBLOCK makes the open of a FIFO fail or
// return at once instead of waiting for a reader, and what is not a
// regular file is refused.
func openAppend(path string) (*os.File, error) {
	f, _, err := openAppendInfo(path)
	return f, err
}

// openAppendInfo is openAppend that also returns the open file's fstat.
func openAppendInfo(path string) (*os.File, os.FileInfo, error) {
	refuse := &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("refusing to write through a symlink (or a junction)")}
	// Windows has no O_NOFOLLOW: the Lstat is its only refusal of a link
	// (creating one there takes a privilege or Developer Mode; a junction
	// needs none but names a folder, which the open below refuses), and
	// it says whether the file is created (restrict). Elsewhere
	// O_NOFOLLOW refuses the link in the open itself and the mode bits
	// are the permission: no Lstat.
	created := false
	if noFollow == 0 {
		fi, err := os.Lstat(path)
		if err == nil && linkLike(fi.Mode()) {
			return nil, nil, refuse
		}
		created = err != nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|noFollow|nonBlock, Mode)
	if err != nil {
		if isLoop(err) {
			return nil, nil, refuse
		}
		return nil, nil, err
	}
	if created {
		if err := restrict(path, Mode); err != nil {
			_ = f.Close()
			return nil, nil, err
		}
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	return f, fi, nil
}

// CreateNew creates an empty file at path (0600) and fails if anything is
// there already: a record that must never be shared, such as a run's
// journal, starts this way.
func CreateNew(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, Mode)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := restrict(path, Mode); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// EnsureFile creates an empty file at path (0600) unless one is there,
// never through a symlink and never waiting on a FIFO; what is there and is
// not a regular file is refused. Lock files start this way: flock opens
// its file with O_CREATE, which would create a planted link's target.
func EnsureFile(path string) error {
	fi, err := os.Lstat(path)
	if err == nil && linkLike(fi.Mode()) {
		return fmt.Errorf("%s is a symlink (or a junction); refusing to use it", path)
	}
	created := err != nil
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|noFollow|nonBlock, Mode)
	if err != nil {
		return err
	}
	defer f.Close()
	if created {
		if err := restrict(path, Mode); err != nil {
			return err
		}
	}
	fi, err = f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	return nil
}
