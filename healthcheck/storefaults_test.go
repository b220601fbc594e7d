//go:build unix

package healthcheck

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
)

// The store refuses a FIFO at once, naming it, and treats a file over
// MaxCacheSize as corrupt: Update sets it aside and starts afresh.
func TestStoreRefusesFIFOAndBoundsSize(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// "At once" is what the error says: refused as not a regular file.
	// Opening a FIFO with no writer blocks for good, so a store that tried
	// would hang here; a minute of it is a hang, not a slow machine.
	type read struct {
		f   *File
		err error
	}
	got := make(chan read, 1)
	go func() {
		f, err := (&Store{Path: fifo}).Read()
		got <- read{f, err}
	}()
	select {
	case r := <-got:
		if !errors.Is(r.err, atomicfile.ErrNotRegular) || !strings.Contains(r.err.Error(), fifo) || r.f == nil {
			t.Errorf("FIFO: %v", r.err)
		}
	case <-time.After(time.Minute):
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close() // lets the blocked reader go
		}
		t.Fatal("reading the store hung on the FIFO")
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"servers":{},"x":"`+strings.Repeat("x", MaxCacheSize)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Store{Path: big}).Read(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("oversized: %v", err)
	}
	var warned string
	s := &Store{Path: big, Warn: func(m string) { warned = m }}
	if err := s.Update(func(*File) error { return nil }); err != nil || !strings.Contains(warned, "moved it to") {
		t.Errorf("update: %v; warned %q", err, warned)
	}
}

// Through the Checker: a healthy entry "expiring" in 9999 is probed once
// its TTL is over (the dead server is found), an unhealthy one "until
// 9999" is probed once the longest backoff is over, and one entry with an
// out-of-range number leaves the other servers' verdicts in place. Before:
// the first let a dead server through forever, the second blocked a live
// one until 9999, the third discarded the whole cache.
func TestCheckerTrustsNoTimestampBeyondTheSettings(t *testing.T) {
	now := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "cache.json")
	cache := `{"version":1,"servers":{
 "dead":{"status":"healthy","checkedAt":` + ms(now) + `,"expiresAt":253370764800000},
 "live":{"status":"unhealthy","checkedAt":` + ms(now) + `,"nextRetryAt":253370764800000,"failureCount":1},
 "other":{"status":"healthy","checkedAt":` + ms(now) + `,"expiresAt":` + ms(now.Add(time.Minute)) + `}}}`
	if err := os.WriteFile(path, []byte(cache), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := now
	var warned []string
	c := New(&Store{Path: path, Warn: func(m string) { warned = append(warned, m) }}, DefaultSettings(),
		Options{Now: func() time.Time { return clock }})
	clock = now.Add(3 * time.Minute)
	if g, _ := c.Gate("dead"); g != GateProbe {
		t.Errorf("dead after its TTL: %v, want a probe", g)
	}
	clock = now.Add(61 * time.Minute)
	if g, _ := c.Gate("live"); g != GateProbe {
		t.Errorf("live after the longest backoff: %v, want a probe", g)
	}
	// One out-of-range number costs its entry only.
	clock = now
	cache = cache[:len(cache)-2] + `,"bad":{"status":"healthy","expiresAt":1e300}}}`
	if err := os.WriteFile(path, []byte(cache), 0o600); err != nil {
		t.Fatal(err)
	}
	if g, _ := c.Gate("other"); g != GateAllow {
		t.Errorf("other: %v: one bad entry cost the others", g)
	}
	if len(warned) == 0 || !strings.Contains(strings.Join(warned, "\n"), `"bad"`) {
		t.Errorf("the bad entry was not reported: %v", warned)
	}
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// A FIFO where the cache's lock file should be: Update fails at once,
// naming it. Before: every write of the cache waited on the FIFO.
func TestStoreRefusesAFIFOLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.json")
	if err := syscall.Mkfifo(path+".lock", 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- (&Store{Path: path}).Update(func(*File) error { return nil }) }()
	select {
	case err := <-done:
		if !errors.Is(err, atomicfile.ErrNotRegular) || !strings.Contains(err.Error(), path+".lock") {
			t.Errorf("update: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Update waited on a FIFO lock file")
	}
}
