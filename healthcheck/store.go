package healthcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
)

// FileVersion is the article's cache format version.
const FileVersion = 1

// File is the whole cache file.
type File struct {
	Version int                        `json:"version"`
	Servers map[string]*Entry          `json:"servers"`
	Extra   map[string]json.RawMessage `json:"-"`
	// Dropped names the entries that could not be read, with why: each
	// costs only itself, the rest of the cache is kept. Store.Read
	// reports them.
	Dropped []string `json:"-"`
}

func (f *File) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		return errors.New("the cache is not a JSON object")
	}
	f.Version = 0
	if v, ok := raw["version"]; ok {
		if err := json.Unmarshal(v, &f.Version); err != nil {
			return fmt.Errorf("version: %w", err)
		}
		delete(raw, "version")
	}
	f.Servers = map[string]*Entry{}
	if s, ok := raw["servers"]; ok {
		var servers map[string]json.RawMessage
		if err := json.Unmarshal(s, &servers); err != nil {
			return fmt.Errorf("servers: %w", err)
		}
		names := make([]string, 0, len(servers))
		for name := range servers {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			var e *Entry
			if err := json.Unmarshal(servers[name], &e); err != nil {
				f.Dropped = append(f.Dropped, fmt.Sprintf("%q (%v)", name, err))
				continue
			}
			if e != nil {
				f.Servers[name] = e
			}
		}
		delete(raw, "servers")
	}
	delete(raw, layoutKey) // the writer states it again
	if len(raw) > 0 {
		f.Extra = raw
	}
	return nil
}

func (f File) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"version":`)
	buf.WriteString(strconv.Itoa(FileVersion))
	buf.WriteString(`,"servers":`)
	servers := f.Servers
	if servers == nil {
		servers = map[string]*Entry{}
	}
	sb, err := json.Marshal(servers)
	if err != nil {
		return nil, err
	}
	buf.Write(sb)
	keys := make([]string, 0, len(f.Extra))
	for k := range f.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		buf.WriteByte(',')
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(f.Extra[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Store is the cache file shared by every hook process, the supervisor and
// the operator commands. Reads take no lock (a rename makes every version
// whole); every change is a read-modify-write under an exclusive lock on a
// sibling .lock file, so concurrent hooks never lose each other's updates.
type Store struct {
	Path string
	// Warn receives problems that must not stay silent: a corrupt file
	// moved aside. Nil discards them (tests).
	Warn func(msg string)
	// Now is used for the name of a moved-aside file.
	Now func() time.Time
	// LockTimeout bounds the wait for the lock (default 10 s): a hook must
	// decide even if another process holds the lock forever.
	LockTimeout time.Duration
}

// ErrCorrupt marks a cache file that could not be parsed, or that is over
// MaxCacheSize.
var ErrCorrupt = errors.New("corrupt health cache")

// MaxCacheSize bounds the cache file a hook reads. An entry is a name, a
// status, a few timestamps and counts and one error line: about 360 bytes
// for a probed server, under 2 KiB with a long error, so 16 MiB is some
// 8,000 to 45,000 servers. Measured (BenchmarkSnapshotEntry, 2 shared
// cores at a load average of 18-39, 2026-12-02): a whole parse costs
// about 2.9 KB and 27 allocations per entry (10,000 servers, a 3.6 MB
// file: 29 MB allocated, 270,000 allocations, 0.6 s), so a 16 MiB file
// costs a whole parse (Update, status, a file not in Layout) some 130 MiB
// and seconds, not "a fraction of a second". A hook's lookup in a file in
// Layout does not parse it: it binary-searches the sorted lines with
// positioned reads (search.go), 7.7 KB and 70 allocations whatever the
// size (0.17-0.26 ms at 10,000 servers under that load), so 16 MiB costs
// a hook some 16 steps of one or two reads of 4 KiB. A larger file is not a cache nightwatch
// wrote: it is set aside like a corrupt one, instead of costing every
// whole parse seconds and gigabytes.
const MaxCacheSize = 16 << 20

// Read returns the current file. A missing file is an empty cache. A
// corrupt one is returned as an empty cache with an error wrapping
// ErrCorrupt; the next Update moves it aside.
//
// The file is read through atomicfile.Read: a FIFO, device or folder where
// the cache should be is refused at once, with its path (never waited
// on), and returned as an empty cache with that error, so a caller decides
// as with no cache and says why; a file over MaxCacheSize is corrupt.
func (s *Store) Read() (*File, error) {
	b, err := atomicfile.Read(s.Path, MaxCacheSize)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{Version: FileVersion, Servers: map[string]*Entry{}}, nil
	}
	if errors.Is(err, atomicfile.ErrTooLarge) {
		return &File{Version: FileVersion, Servers: map[string]*Entry{}},
			fmt.Errorf("%w %s: %v", ErrCorrupt, s.Path, err)
	}
	if errors.Is(err, atomicfile.ErrNotRegular) {
		return &File{Version: FileVersion, Servers: map[string]*Entry{}},
			fmt.Errorf("health cache: %w; refused without waiting on it: deciding as with no cache, and nothing is saved until it is a regular file again", err)
	}
	if err != nil {
		return &File{Version: FileVersion, Servers: map[string]*Entry{}},
			fmt.Errorf("read health cache %s: %w", s.Path, err)
	}
	f, err := parseFile(s.Path, b)
	if err == nil && len(f.Dropped) > 0 {
		s.warnDropped(f.Dropped)
	}
	return f, err
}

func (s *Store) warnDropped(dropped []string) {
	s.warn(fmt.Sprintf("nightwatch: health cache %s: left out %d unreadable entr%s, decided as unknown (probed): %s",
		s.Path, len(dropped), map[bool]string{true: "y", false: "ies"}[len(dropped) == 1], strings.Join(dropped, "; ")))
}

func parseFile(path string, b []byte) (*File, error) {
	f := &File{}
	if len(bytes.TrimSpace(b)) == 0 {
		return &File{Version: FileVersion, Servers: map[string]*Entry{}},
			fmt.Errorf("%w %s: the file is empty", ErrCorrupt, path)
	}
	if err := json.Unmarshal(b, f); err != nil {
		return &File{Version: FileVersion, Servers: map[string]*Entry{}},
			fmt.Errorf("%w %s: %v", ErrCorrupt, path, err)
	}
	if f.Version != FileVersion && f.Version != 0 {
		return &File{Version: FileVersion, Servers: map[string]*Entry{}},
			fmt.Errorf("%w %s: version %d is not the version-1 format nightwatch reads", ErrCorrupt, path, f.Version)
	}
	f.Version = FileVersion
	return f, nil
}

// Entry returns a copy of one server's entry, or nil.
func (f *File) Entry(name string) *Entry {
	if e, ok := f.Servers[name]; ok && e != nil {
		c := *e
		return &c
	}
	return nil
}

// Update runs change on the current file under the exclusive lock and
// writes the result atomically (temp file, fsync, rename, 0600). A corrupt
// file is moved aside to <name>.corrupt-<unixms> first and reported through
// Warn. If change returns an error nothing is written.
func (s *Store) Update(change func(f *File) error) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()

	if fi, err := os.Lstat(s.Path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		// A planted link would make nightwatch overwrite another file.
		return fmt.Errorf("health cache %s is a symlink; nightwatch only writes regular files it owns", s.Path)
	}
	f, err := s.Read()
	if errors.Is(err, ErrCorrupt) {
		aside := s.moveAside()
		s.warn(fmt.Sprintf("nightwatch: %v; moved it to %s and started a fresh cache", err, aside))
	} else if err != nil {
		return err
	}
	if err := change(f); err != nil {
		return err
	}
	// One server per line (Layout): a hook finds its server's entry
	// without decoding the others, and operators still read it with cat.
	data, err := encodeFile(f)
	if err != nil {
		return fmt.Errorf("encode health cache: %w", err)
	}
	if err := atomicfile.WriteFile(s.Path, data, atomicfile.Mode); err != nil {
		return fmt.Errorf("save health cache: %w", err)
	}
	return nil
}

func (s *Store) moveAside() string {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	aside := s.Path + ".corrupt-" + strconv.FormatInt(now.UnixMilli(), 10)
	if err := os.Rename(s.Path, aside); err != nil {
		return fmt.Sprintf("(nowhere: %v)", err)
	}
	return aside
}

func (s *Store) warn(msg string) {
	if s.Warn != nil {
		s.Warn(msg)
	}
}

func (s *Store) lock() (func(), error) {
	dir := filepath.Dir(s.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock health cache: %w", err)
	}
	if err := ensureLockFile(s.Path + ".lock"); err != nil {
		return nil, fmt.Errorf("lock health cache: %w", err)
	}
	lk := flock.New(s.Path+".lock", flock.SetPermissions(atomicfile.Mode))
	timeout := s.LockTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ok, err := tryLock(lk, timeout)
	if err != nil {
		return nil, fmt.Errorf("lock health cache %s.lock: %w", s.Path, err)
	}
	if !ok {
		return nil, fmt.Errorf("lock health cache %s.lock: still held by another process after %s", s.Path, timeout)
	}
	return func() { _ = lk.Unlock() }, nil
}

// Clamp bounds every entry by what settings s could have written at now:
// a verdict of health lasts at most TTL from when it was checked, a
// backoff ends at most max(MaxBackoff, MaxRetryAfter) after it (never after
// now + that), no time is
// in the future, and counts are never negative. A hand-edited or hostile
// "expiresAt: 9999-…" then lets a dead server through for one TTL, not
// forever, and an unhealthy one blocks a live server for one backoff.
func (f *File) Clamp(s Settings, now time.Time) {
	if f == nil {
		return
	}
	for _, e := range f.Servers {
		if e != nil {
			*e = s.Clamp(*e, now)
		}
	}
}

// Clamp is e bounded by the settings at now (see File.Clamp).
func (s Settings) Clamp(e Entry, now time.Time) Entry {
	s = s.withDefaults()
	ms := MillisOf(now)
	future := func(m *Millis) {
		if *m > ms {
			*m = ms
		}
		if *m < 0 {
			*m = 0
		}
	}
	future(&e.CheckedAt)
	future(&e.LastRestoredAt)
	future(&e.UnhealthySince)
	future(&e.TrialAt)
	future(&e.RefusedAt)
	// Both bounds are anchored to when the entry was checked (never after
	// now), so that re-reading the file does not move them: an entry that
	// does not say when (hand-written) is anchored to now, and the next
	// write of the cache keeps that anchor.
	if e.CheckedAt == 0 && (e.ExpiresAt != 0 || e.NextRetryAt != 0) {
		e.CheckedAt = ms
	}
	base := e.CheckedAt
	if limit := base + Millis(s.TTL.Milliseconds()); e.ExpiresAt > limit {
		e.ExpiresAt = limit
	}
	if limit := base + Millis(max(s.MaxBackoff, s.MaxRetryAfter).Milliseconds()); e.NextRetryAt > limit {
		e.NextRetryAt = limit
	}
	if e.ExpiresAt < 0 {
		e.ExpiresAt = 0
	}
	if e.NextRetryAt < 0 {
		e.NextRetryAt = 0
	}
	e.FailureCount = max(e.FailureCount, 0)
	e.ConsecutiveFailures = max(e.ConsecutiveFailures, 0)
	if e.LatencyMs < 0 {
		e.LatencyMs = 0
	}
	return e
}

// saturatingInc is n+1 that stops at the largest int instead of wrapping.
func saturatingInc(n int) int {
	if n >= math.MaxInt {
		return math.MaxInt
	}
	return max(n, 0) + 1
}
