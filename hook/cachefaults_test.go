//go:build unix

package hook

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
)

// invokeWithin fails the test if the hook does not answer within d.
func invokeWithin(t *testing.T, d time.Duration, in string, env map[string]string) run {
	t.Helper()
	done := make(chan run, 1)
	go func() { done <- invoke(t, in, env) }()
	select {
	case r := <-done:
		return r
	case <-time.After(d):
		t.Fatalf("the hook did not answer within %s", d)
		return run{}
	}
}

// A FIFO where the cache should be is refused at once, with its path: the
// hook decides as with no cache and says so. Before: each call waited on
// the FIFO (60 s, then ran unchecked).
func TestCacheFIFOIsRefusedAtOnce(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "cache.json")
	if err := syscall.Mkfifo(state, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, in := range []string{
		payload("PreToolUse", "mcp__notes__add_note", ""),
		payload("PostToolUseFailure", "mcp__notes__x", `,"error":"MCP error -32000: Connection closed"`),
	} {
		start := time.Now()
		r := invokeWithin(t, 5*time.Second, in, map[string]string{"HOME": home, "NIGHTWATCH_STATE_PATH": state})
		if time.Since(start) > 2*time.Second {
			t.Errorf("the hook took %s", time.Since(start))
		}
		if r.code != 0 || !strings.Contains(r.stderr, state) || !strings.Contains(r.stderr, "FIFO") || !strings.Contains(r.stderr, "as with no cache") {
			t.Errorf("%+v: want an allowed call that names the FIFO", r)
		}
	}
}

// A cache over the bound (here a valid file with a 17 MiB extra field) is
// set aside like a corrupt one, said, and the decision is made from a
// fresh cache. Before: it was read and kept whole, at any size.
func TestOversizedCacheIsSetAside(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, "cache.json")
	big := `{"version":1,"servers":{},"pad":"` + strings.Repeat("x", healthcheck.MaxCacheSize+1) + `"}`
	if err := os.WriteFile(state, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	in := payload("PostToolUseFailure", "mcp__notes__x", `,"error":"MCP error -32000: Connection closed"`)
	r := invokeWithin(t, 10*time.Second, in, map[string]string{"HOME": home, "NIGHTWATCH_STATE_PATH": state})
	if r.code != 0 || !strings.Contains(r.stderr, "too large") || !strings.Contains(r.stderr, "moved it to") {
		t.Errorf("%+v", r)
	}
	aside, _ := filepath.Glob(state + ".corrupt-*")
	fi, err := os.Stat(state)
	if len(aside) != 1 || err != nil || fi.Size() > 4096 {
		t.Errorf("set aside %v; cache now %v %v", aside, fi, err)
	}
	f, err := (&healthcheck.Store{Path: state}).Read()
	if err != nil || f.Servers["notes"] == nil {
		t.Errorf("the failure was not recorded in a fresh cache: %v %+v", err, f)
	}
}
