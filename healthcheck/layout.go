package healthcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
}

// Snapshot reads the cache file once. Errors are those of Read, returned
// by Err; a snapshot with an error is an empty cache.
func (s *Store) Snapshot() *Snapshot {
	snap := &Snapshot{path: s.Path, warn: s.warn}
	b, err := atomicfile.Read(s.Path, MaxCacheSize)
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

// Err is the error reading the file met (nil for a missing file).
func (sn *Snapshot) Err() error { return sn.err }

// Entry is server's entry, or nil; an entry that cannot be read is nil
// and said through the store's Warn.
func (sn *Snapshot) Entry(server string) *Entry {
	if !sn.layout {
		return sn.file.Entry(server)
	}
	line := sn.line(server)
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
	if !sn.layout {
		return sn.file.Servers[server] != nil
	}
	return sn.line(server) != nil
}

// line is server's entry in a Layout file, without its comma.
func (sn *Snapshot) line(server string) []byte {
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
