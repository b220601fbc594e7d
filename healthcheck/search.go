package healthcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"unicode/utf8"
)

// A hook's lookup of one server in a large cache file in Layout does not
// read the file: the entry lines are sorted by name, so it binary-searches
// them with positioned reads (os.File.ReadAt, on every platform) on the
// one open file, a few KiB per step and about log2(servers) steps. The
// open file is one version of the cache (writers replace it by a rename),
// so the lookups of one Snapshot all see the same cache, as a whole read
// does; reads take no lock, as every read of the cache.

// searchFrom is the size from which a Snapshot searches a file in Layout
// instead of reading it whole: below it, one read is cheaper than several
// (a variable so that tests and fuzzing search small files too).
var searchFrom int64 = 32 << 10

// searchWindow is how much one step reads; a longer line is read on.
const searchWindow = 4 << 10

// entriesHead is everything before the first entry line of a file in
// Layout, after the size digits.
var entriesHead = []byte("\",\n  \"version\": " + strconv.Itoa(FileVersion) + ",\n  \"servers\": {\n")

// searcher finds entry lines in an open file in Layout.
type searcher struct {
	f    *os.File
	size int64
	// start is the offset of the first entry line.
	start int64
	// buf is reused by every step; a line returned aliases it.
	buf []byte
}

// openSearch returns a searcher for f when f (of size bytes) is a file in
// Layout with at least one entry, else nil.
func openSearch(f *os.File, size int64) *searcher {
	head := make([]byte, len(layoutHead)+sizeDigits+len(entriesHead))
	if int64(len(head)) > size {
		return nil
	}
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil
	}
	if !bytes.HasPrefix(head, []byte(layoutHead)) || !bytes.HasSuffix(head, entriesHead) {
		return nil
	}
	n, err := strconv.ParseInt(string(head[len(layoutHead):len(layoutHead)+sizeDigits]), 10, 64)
	if err != nil || n != size {
		return nil
	}
	return &searcher{f: f, size: size, start: int64(len(head))}
}

// errNotSorted is returned when the search meets lines out of order: the
// file says it is in Layout and is not (made by hand to the byte).
var errNotSorted = errors.New("entry lines not sorted")

// find is server's entry line (without its comma), nil when the file has
// none. An error means the file could not be searched (an I/O error, lines
// out of order): the caller reads it whole.
func (s *searcher) find(server string) ([]byte, error) {
	if !utf8.ValidString(server) {
		// Its key is written with U+FFFD for the invalid bytes, which
		// sorts it elsewhere: only a whole read finds it.
		return nil, errNotSorted
	}
	// Invariant: server's line, if any, starts in [lo, hi); lo is a line
	// start; every entry line before lo is below server and every line
	// from hi on is above it (lowKey, highKey: for the order check).
	lo, hi := s.start, s.size
	var lowKey, highKey *string
	for lo < hi {
		mid := lo + (hi-lo)/2
		at, line, next, err := s.lineFrom(mid)
		if err != nil {
			return nil, err
		}
		if at >= hi {
			// No line starts in [mid, hi); mid > lo, since lo is a line
			// start.
			hi = mid
			continue
		}
		key, value, entry := entryLineKey(line)
		if entry && ((lowKey != nil && key <= *lowKey) || (highKey != nil && key >= *highKey)) {
			return nil, errNotSorted
		}
		switch {
		case !entry || server < key:
			// A line that is no entry is the end of the servers object:
			// above every name.
			hi = at
			if entry {
				highKey = &key
			}
		case server > key:
			lo = next
			lowKey = &key
		default:
			return bytes.Clone(bytes.TrimSuffix(line[value:], []byte(","))), nil
		}
	}
	return nil, nil
}

// lineFrom returns the first line that starts at or after off: its
// offset, its bytes without the newline, and the offset of the next line
// (at is the file's size when no line starts there).
func (s *searcher) lineFrom(off int64) (at int64, line []byte, next int64, err error) {
	base := off // the file offset of buf[0]
	if off > s.start {
		// off is a line start when the byte before it ends a line.
		base = off - 1
	}
	buf := s.buf[:0]
	defer func() { s.buf = buf[:0] }()
	start := -1 // the line's start in buf, once known
	if base == off {
		start = 0
	}
	scanned := 0 // buf[:scanned] has no newline the search still needs
	for {
		if start < 0 {
			if i := bytes.IndexByte(buf[scanned:], '\n'); i >= 0 {
				start = scanned + i + 1
				scanned = start
			} else {
				scanned = len(buf)
			}
		}
		if start >= 0 {
			if i := bytes.IndexByte(buf[scanned:], '\n'); i >= 0 {
				end := scanned + i
				return base + int64(start), buf[start:end], base + int64(end) + 1, nil
			}
			scanned = len(buf)
		}
		pos := base + int64(len(buf))
		if pos >= s.size {
			if start < 0 || base+int64(start) >= s.size {
				return s.size, nil, s.size, nil
			}
			// The file's last line ends with a newline: this file was cut
			// short.
			return 0, nil, 0, io.ErrUnexpectedEOF
		}
		need := int(min(searchWindow, s.size-pos))
		buf = slices.Grow(buf, need)
		n, err := s.f.ReadAt(buf[len(buf):len(buf)+need], pos)
		if n < need {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, nil, 0, err
		}
		buf = buf[:len(buf)+need]
	}
}

// entryLineKey is the server name an entry line starts with and the
// offset of its value; entry is false for a line that is not an entry
// line (the end of the servers object, or a key that does not decode).
func entryLineKey(line []byte) (key string, value int, entry bool) {
	if !bytes.HasPrefix(line, []byte(entryIndent+`"`)) {
		return "", 0, false
	}
	b := line[len(entryIndent):]
	end := 1
	escaped := false
	for end < len(b) && b[end] != '"' {
		if b[end] == '\\' {
			escaped = true
			end++
		}
		end++
	}
	if end >= len(b) || !bytes.HasPrefix(b[end+1:], []byte(": ")) {
		return "", 0, false
	}
	value = len(entryIndent) + end + 3
	if !escaped {
		return string(b[1:end]), value, true
	}
	if err := json.Unmarshal(b[:end+1], &key); err != nil {
		return "", 0, false
	}
	return key, value, true
}
