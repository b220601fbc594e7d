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

// invokeUnlessHung fails the test if the hook has not answered in two
// minutes: a hook blocked on its cache file hangs, however fast or busy
// the machine. Whether it answered at once is what its stderr says.
func invokeUnlessHung(t *testing.T, in string, env map[string]string) run {
	t.Helper()
	const hang = 2 * time.Minute
	done := make(chan run, 1)
	go func() { done <- invoke(t, in, env) }()
	select {
	case r := <-done:
		return r
	case <-time.After(hang):
		t.Fatalf("the hook hung: no answer in %s", hang)
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
		// Refused, named, and decided without it: a hook that waited on
		// the FIFO would have hung or said that it gave up waiting.
		r := invokeUnlessHung(t, in, map[string]string{"HOME": home, "NIGHTWATCH_STATE_PATH": state})
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
	r := invokeUnlessHung(t, in, map[string]string{"HOME": home, "NIGHTWATCH_STATE_PATH": state})
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
