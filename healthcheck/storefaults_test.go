package healthcheck

import (
	"errors"
	"os"
	"path/filepath"
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
	start := time.Now()
	f, err := (&Store{Path: fifo}).Read()
	if !errors.Is(err, atomicfile.ErrNotRegular) || !strings.Contains(err.Error(), fifo) || f == nil || time.Since(start) > time.Second {
		t.Errorf("FIFO: %v after %s", err, time.Since(start))
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
