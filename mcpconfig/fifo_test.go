//go:build unix

package mcpconfig

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO where a config file should be (a searched .mcp.json, an explicit
// NIGHTWATCH_MCP_CONFIG file) is refused at once, with its path, and the
// other files still count. Before: the resolve waited on the FIFO.
func TestResolveRefusesAFIFOAtOnce(t *testing.T) {
	l := newLayout(t)
	if err := syscall.Mkfifo(l.mcpJSON(), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	explicit := filepath.Join(t.TempDir(), "explicit.json")
	if err := syscall.Mkfifo(explicit, 0o600); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, l.userSettings(), servers("user", "u"))
	for _, opts := range []Options{l.options(), {Home: l.options().Home, Cwd: l.options().Cwd, Explicit: []string{explicit}}} {
		done := make(chan *Resolved, 1)
		go func() { done <- Resolve(opts) }()
		var r *Resolved
		select {
		case r = <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Resolve waited on a FIFO")
		}
		if len(r.Problems) != 1 || !strings.Contains(r.Problems[0].Message, "FIFO") {
			t.Errorf("problems = %+v", r.Problems)
		}
		if p := r.Problems[0]; !strings.Contains(p.Message, l.mcpJSON()) && !strings.Contains(p.Message, explicit) {
			t.Errorf("the FIFO is not named: %q", p.Message)
		}
		if len(opts.Explicit) == 0 && r.Servers["u"] == nil {
			t.Errorf("the other files were dropped: %v", r.Names)
		}
	}
}
