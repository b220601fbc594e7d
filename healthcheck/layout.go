package healthcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strconv"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
)

// Layout names how Store writes the cache file: still the article's
// version-1 JSON, laid out so that one server's entry can be found without
// decoding the others. The first key says so and gives the file's size:
//
//	{
//	  "nightwatchLayout": "lines-1 size=0000000004321",
//	  "version": 1,
//	  "servers": {
//	    "a": {"status":"healthy",…},
//	    "b": {…}
//	  }
//	}
//
// Every server is one line, four spaces in, names sorted; no other line
// starts with four spaces. A file whose size is not the one it states
// (edited by hand, rewritten by the article's hook) is read whole, as any
// other JSON file is.
const Layout = "lines-1"

// layoutKey is the top-level key that states the layout; it is not kept
// as an unknown field when the file is read.
const layoutKey = "nightwatchLayout"

const (
	layoutHead  = "{\n  \"" + layoutKey + "\": \"" + Layout + " size="
	sizeDigits  = 13
	entryIndent = "    "
)

// encodeFile writes f in Layout.
func encodeFile(f *File) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(layoutHead)
	buf.WriteString(fmt.Sprintf("%0*d", sizeDigits, 0))
	buf.WriteString("\",\n  \"version\": ")
	buf.WriteString(strconv.Itoa(FileVersion))
	buf.WriteString(",\n  \"servers\": {")
	names := make([]string, 0, len(f.Servers))
	for n, e := range f.Servers {
		if e != nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for i, n := range names {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n" + entryIndent)
		buf.Write(entryKey(n))
		buf.WriteString(": ")
		eb, err := json.Marshal(f.Servers[n])
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", n, err)
		}
		// Fields kept from other tools are written as they came, and may
		// span lines: one line per server is the layout's promise.
		if err := json.Compact(&buf, eb); err != nil {
			return nil, fmt.Errorf("server %q: %w", n, err)
		}
	}
	if len(names) > 0 {
		buf.WriteString("\n  ")
	}
	buf.WriteByte('}')
	keys := make([]string, 0, len(f.Extra))
	for k := range f.Extra {
		if k != layoutKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		buf.WriteString(",\n  ")
		buf.Write(kb)
		buf.WriteString(": ")
		if err := json.Compact(&buf, f.Extra[k]); err != nil {
			return nil, fmt.Errorf("field %s: %w", kb, err)
		}
	}
	buf.WriteString("\n}\n")
	b := buf.Bytes()
	copy(b[len(layoutHead):], fmt.Sprintf("%0*d", sizeDigits, len(b)))
	return b, nil
}

// entryKey is a server name as a JSON key, as encodeFile writes it and
// lookups search for it.
func entryKey(name string) []byte {
	b, _ := json.Marshal(name)
	return b
}

// inLayout reports whether b is a whole file written in Layout.
func inLayout(b []byte) bool {
	if len(b) < len(layoutHead)+sizeDigits || !bytes.HasPrefix(b, []byte(layoutHead)) {
		return false
	}
	n, err := strconv.Atoi(string(b[len(layoutHead) : len(layoutHead)+sizeDigits]))
	return err == nil && n == len(b)
}

// Snapshot is the cache file as read once: a lookup of one server decodes
// that server's entry only when the file is in Layout, and the whole file
// otherwise (once).
type Snapshot struct {
	path   string
	data   []byte
	layout bool
	file   *File
	err    error
	warn   func(string)
	// search, for a large file in Layout, finds one entry on the open
	// file without reading the rest (search.go); found keeps its answers.
	search *searcher
	found  map[string][]byte
}

// Snapshot reads the cache file once. Errors are those of Read, returned
// by Err; a snapshot with an error is an empty cache.
//
// A large file in Layout is not read: the Snapshot keeps it open and
// searches it for each server asked of it, until Close.
func (s *Store) Snapshot() *Snapshot {
	snap := &Snapshot{path: s.Path, warn: s.warn}
	b, sr, err := s.open()
	if sr != nil {
		snap.search, snap.layout = sr, true
		return snap
	}
	if err == nil && inLayout(b) {
		snap.data, snap.layout = b, true
		return snap
	}
	if errors.Is(err, fs.ErrNotExist) {
		snap.file = &File{Version: FileVersion, Servers: map[string]*Entry{}}
		return snap
	}
	if err != nil {
		// Read says what is wrong in its words; a second read is only
		// paid for on this path.
		snap.file, snap.err = s.Read()
		return snap
	}
	snap.file, snap.err = parseFile(s.Path, b)
	if snap.err == nil && len(snap.file.Dropped) > 0 {
		s.warnDropped(snap.file.Dropped)
	}
	return snap
}

// open is the cache file opened for a Snapshot: a searcher when it is a
// large file in Layout, else its bytes, with atomicfile.Read's errors.
func (s *Store) open() ([]byte, *searcher, error) {
	read := func() ([]byte, *searcher, error) {
		b, err := atomicfile.Read(s.Path, MaxCacheSize) // its words for what is wrong
		return b, nil, err
	}
	f, err := atomicfile.OpenRegular(s.Path)
	if err != nil {
		return read()
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() > MaxCacheSize {
		_ = f.Close()
		return read()
	}
	if fi.Size() >= searchFrom {
		if sr := openSearch(f, fi.Size()); sr != nil {
			return nil, sr, nil
		}
	}
	defer f.Close()
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxCacheSize+1)); err != nil || buf.Len() > MaxCacheSize {
		return read()
	}
	return buf.Bytes(), nil, nil
}

// Close lets go of the file a Snapshot searches (see Snapshot); a
// Snapshot that read its file whole holds nothing. Lookups after Close
// read nothing more. Close of nil does nothing.
func (sn *Snapshot) Close() {
	if sn != nil && sn.search != nil {
		_ = sn.search.f.Close()
		sn.search = nil
	}
}

// whole reads a searched file whole and closes it: a Snapshot's names
// need it, and so does a file its search could not use (why), which is
// then parsed whole as a file in any other layout is.
func (sn *Snapshot) whole(why error) {
	sr := sn.search
	if sr == nil {
		return
	}
	data := make([]byte, sr.size)
	_, err := sr.f.ReadAt(data, 0)
	sn.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		sn.data = nil
		if sn.warn != nil {
			sn.warn(fmt.Sprintf("nightwatch: read health cache %s: %v; deciding as with no cache", sn.path, err))
		}
		return
	}
	sn.data = data
	if why == nil && inLayout(data) {
		return
	}
	sn.layout, sn.data = false, nil
	sn.file, sn.err = parseFile(sn.path, data)
	if sn.err != nil && sn.warn != nil {
		sn.warn("nightwatch: " + sn.err.Error())
	}
	if sn.err == nil && len(sn.file.Dropped) > 0 && sn.warn != nil {
		(&Store{Path: sn.path, Warn: sn.warn}).warnDropped(sn.file.Dropped)
	}
}

// Err is the error reading the file met (nil for a missing file).
func (sn *Snapshot) Err() error { return sn.err }

// Entry is server's entry, or nil; an entry that cannot be read is nil
// and said through the store's Warn.
func (sn *Snapshot) Entry(server string) *Entry {
	var line []byte
	if sn.layout {
		line = sn.line(server) // may find the file is not in Layout
	}
	if !sn.layout {
		return sn.file.Entry(server)
	}
	if line == nil {
		return nil
	}
	var e *Entry
	if err := json.Unmarshal(line, &e); err != nil {
		if sn.warn != nil {
			sn.warn(fmt.Sprintf("nightwatch: health cache %s: left out the unreadable entry %q (%v), decided as unknown (probed)", sn.path, server, err))
		}
		return nil
	}
	return e
}

// Has reports whether the cache has an entry for server, without decoding
// it.
func (sn *Snapshot) Has(server string) bool {
	var line []byte
	if sn.layout {
		line = sn.line(server) // may find the file is not in Layout
	}
	if !sn.layout {
		return sn.file.Servers[server] != nil
	}
	return line != nil
}

// line is server's entry in a Layout file, without its comma.
func (sn *Snapshot) line(server string) []byte {
	if sn.search != nil {
		if l, ok := sn.found[server]; ok {
			return l
		}
		l, err := sn.search.find(server)
		if err == nil {
			if sn.found == nil {
				sn.found = map[string][]byte{}
			}
			sn.found[server] = l
			return l
		}
		sn.whole(err)
		if !sn.layout {
			return nil // callers ask sn.file
		}
	}
	want := append([]byte("\n"+entryIndent), entryKey(server)...)
	want = append(want, ": "...)
	at := bytes.Index(sn.data, want)
	if at < 0 {
		return nil
	}
	rest := sn.data[at+len(want):]
	if end := bytes.IndexByte(rest, '\n'); end >= 0 {
		rest = rest[:end]
	}
	return bytes.TrimSuffix(rest, []byte(","))
}

// Names are the servers the cache has an entry for, sorted.
func (sn *Snapshot) Names() []string {
	if !sn.layout {
		names := make([]string, 0, len(sn.file.Servers))
		for n := range sn.file.Servers {
			names = append(names, n)
		}
		sort.Strings(names)
		return names
	}
	if sn.search != nil {
		sn.whole(nil)
		if !sn.layout {
			return sn.Names()
		}
	}
	var names []string
	prefix := []byte("\n" + entryIndent + "\"")
	for b := sn.data; ; {
		at := bytes.Index(b, prefix)
		if at < 0 {
			break
		}
		b = b[at+len(prefix)-1:]
		end := 1
		for end < len(b) && b[end] != '"' {
			if b[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(b) {
			break
		}
		if key := b[1:end]; bytes.IndexByte(key, '\\') < 0 {
			names = append(names, string(key))
		} else {
			var name string
			if json.Unmarshal(b[:end+1], &name) == nil {
				names = append(names, name)
			}
		}
		b = b[end+1:]
	}
	return names
}
