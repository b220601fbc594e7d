package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
)

// ErrNotRegular is returned by Read for a path that is not a regular file:
// a FIFO, a device, a socket or a folder. Reading one could block forever
// (a FIFO with no writer) or never end (a device).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned by Read for a file over its size bound.
var ErrTooLarge = errors.New("file too large")

// Read returns the contents of the regular file at path, following
// symlinks, and refuses at once anything else: the file is opened without
// blocking (a FIFO with no writer would otherwise hang the caller) and
// checked with fstat on the open descriptor, so a swap between the check
// and the read cannot slip a FIFO in. limit > 0 bounds the size: a larger
// file is refused with ErrTooLarge, without reading it all. Errors are
// *fs.PathError, naming the path.
func Read(path string, limit int64) ([]byte, error) {
	fail := func(err error) ([]byte, error) { return nil, &fs.PathError{Op: "read", Path: path, Err: err} }
	f, err := openNonblocking(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fail(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if !fi.Mode().IsRegular() {
		return fail(fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode())))
	}
	if limit > 0 && fi.Size() > limit {
		return fail(fmt.Errorf("%w (%d bytes, the bound is %d)", ErrTooLarge, fi.Size(), limit))
	}
	r := io.Reader(f)
	if limit > 0 {
		// The file may grow after the stat.
		r = io.LimitReader(f, limit+1)
	}
	// Sized from the stat: io.ReadAll's doubling from 512 bytes copies a
	// multi-megabyte cache a dozen times.
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(r); err != nil {
		return fail(err)
	}
	data := buf.Bytes()
	if limit > 0 && int64(len(data)) > limit {
		return fail(fmt.Errorf("%w (over %d bytes)", ErrTooLarge, limit))
	}
	return data, nil
}

// kind names a non-regular file type for an error message.
func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "a device"
	case m.IsDir():
		return "a folder"
	default:
		return "type " + m.Type().String()
	}
}

// OpenRegular opens path for a reader that streams it (a log followed as
// it grows): like Read, the open never waits (a FIFO with no writer is
// not waited on) and anything but a regular file is refused, with its
// path. Errors are *fs.PathError.
func OpenRegular(path string) (*os.File, error) {
	f, err := openNonblocking(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	return f, nil
}

// Holds says whether path is already what WriteFile(path, data, Mode)
// would leave there: a regular file, not a symlink, with no permission
// for group or others (on Windows, where ACLs carry the permission, the
// file is one of ours by its folder), holding exactly data. A caller that
// writes the same bytes again and again skips the write (a new inode and
// a rename) when it does; anything else, and any error, is false.
func Holds(path string, data []byte) bool {
	before, err := os.Lstat(path)
	if err != nil || !before.Mode().IsRegular() || before.Size() != int64(len(data)) ||
		(runtime.GOOS != "windows" && !ownerOnly(before.Mode())) {
		return false
	}
	f, err := openNonblocking(path)
	if err != nil {
		return false
	}
	defer f.Close()
	// The file opened is the one checked: not a link or another file
	// swapped in since.
	if fi, err := f.Stat(); err != nil || !os.SameFile(before, fi) {
		return false
	}
	got := make([]byte, len(data)+1)
	n, _ := io.ReadFull(f, got)
	return n == len(data) && bytes.Equal(got[:n], data)
}
