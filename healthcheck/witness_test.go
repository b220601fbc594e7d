package healthcheck

import (
	"context"
	"testing"

	"github.com/nightwatch-dev/nightwatch/healthcheck/probe"
)

// TestAStoppingSessionIsNoWitness: a failure that would open or count
// against the server records nothing when the session it came from is no
// witness (nightwatch is stopping it, its owner died), and says why; a
// witness's failure is recorded as before.
func TestAStoppingSessionIsNoWitness(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		noWitness string
		wantEntry bool
	}{
		{"a closed connection from a stopping session", "MCP error -32000: Connection closed", "nightwatch is stopping this session", false},
		{"an upstream 503 from a session whose owner died", "upstream returned 503 Service Unavailable", "the owner is gone", false},
		{"a closed connection from a witness", "MCP error -32000: Connection closed", "", true},
		{"an upstream 503 from a witness", "upstream returned 503 Service Unavailable", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, probe.Result{Verdict: probe.Healthy})
			var warned []string
			f.c.Warn = func(s string) { warned = append(warned, s) }
			asked := 0
			f.c.NoWitness = func() string { asked++; return tt.noWitness }
			cl, e := f.c.RecordFailure(context.Background(), "notes", f.srv, tt.text)
			if (e != nil) != tt.wantEntry {
				t.Fatalf("entry %+v, want one recorded: %v", e, tt.wantEntry)
			}
			if cl.NotWitness != tt.noWitness {
				t.Errorf("NotWitness %q, want %q", cl.NotWitness, tt.noWitness)
			}
			stored := f.c.read().Entry("notes")
			if !tt.wantEntry && (stored != nil || f.prober.calls != 0 || f.reconnects != 0) {
				t.Errorf("a session that is no witness changed the server: entry %+v, %d probes, %d reconnects", stored, f.prober.calls, f.reconnects)
			}
			if !tt.wantEntry && len(warned) == 0 {
				t.Errorf("the failure was dropped silently")
			}
			if asked != 1 {
				t.Errorf("NoWitness asked %d times, want once", asked)
			}
		})
	}
	// A tool's own error is never asked about: it is no evidence anyway.
	f := newFixture(t)
	f.c.NoWitness = func() string { t.Error("NoWitness asked about a tool's own error"); return "" }
	f.c.RecordFailure(context.Background(), "notes", f.srv, "ENOENT: no such file or directory, open '/x'")
}
