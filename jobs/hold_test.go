package jobs

import (
	"strings"
	"testing"
	"time"
)

// TestMaxHold: health.max_hold and a server's max_hold, their bounds, and
// a stall_timeout a written hold could outlast refused by name.
func TestMaxHold(t *testing.T) {
	const head = "version: 1\nname: n\nagent: {command: /bin/true}\n"
	tests := []struct {
		name      string
		yaml      string
		wantErr   string
		wantHold  time.Duration // of job a's calls to notes
		wantOther time.Duration // of job a's calls to a server without its own
	}{
		{"default", "servers:\n  notes: {command: /bin/true}\njobs:\n  - {name: a, prompt: hi, servers: [notes]}\n",
			"", 2 * time.Minute, 2 * time.Minute},
		{"the batch's", "health: {max_hold: 90s}\nservers:\n  notes: {command: /bin/true}\njobs:\n  - {name: a, prompt: hi, servers: [notes]}\n",
			"", 90 * time.Second, 90 * time.Second},
		{"a server's own", "servers:\n  notes: {command: /bin/true, max_hold: 4m}\njobs:\n  - {name: a, prompt: hi, servers: [notes]}\n",
			"", 4 * time.Minute, 2 * time.Minute},
		{"off", "health: {max_hold: 0}\nservers:\n  notes: {command: /bin/true}\njobs:\n  - {name: a, prompt: hi, servers: [notes]}\n",
			"", 0, 0},
		{"the default gives way to a short stall_timeout",
			"servers:\n  notes: {command: /bin/true}\njobs:\n  - {name: a, prompt: hi, servers: [notes], stall_timeout: 1m}\n",
			"", 30 * time.Second, 30 * time.Second},
		{"over the bound", "health: {max_hold: 10m}\njobs:\n  - {name: a, prompt: hi}\n", "health.max_hold: 10m must be at most 5m0s", 0, 0},
		{"a server's over the bound", "servers:\n  notes: {command: /bin/true, max_hold: 6m}\njobs:\n  - {name: a, prompt: hi, servers: [notes]}\n",
			"servers.notes.max_hold: 6m must be at most 5m0s", 0, 0},
		{"not a duration", "health: {max_hold: soon}\njobs:\n  - {name: a, prompt: hi}\n", "health.max_hold", 0, 0},
		{"a written hold the defaults' stall_timeout cannot fit",
			"defaults: {stall_timeout: 2m}\nhealth: {max_hold: 2m}\nservers:\n  notes: {command: /bin/true}\njobs:\n  - {name: a, prompt: hi, servers: [notes]}\n",
			"defaults.stall_timeout: 2m0s must exceed the longest hold", 0, 0},
		{"a server's hold a job's stall_timeout cannot fit",
			"servers:\n  notes: {command: /bin/true, max_hold: 3m}\njobs:\n  - {name: a, prompt: hi, servers: [notes], stall_timeout: 3m}\n",
			"jobs[0].stall_timeout: 3m0s must exceed the longest hold", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load(writeFile(t, t.TempDir(), "night.yaml", head+tt.yaml), noEnv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			j := b.Jobs[0]
			if got := b.HoldOf(j, b.Server("notes")); got != tt.wantHold {
				t.Errorf("hold of notes = %s, want %s", got, tt.wantHold)
			}
			if got := b.HoldOf(j, nil); got != tt.wantOther {
				t.Errorf("hold of the others = %s, want %s", got, tt.wantOther)
			}
		})
	}
}

// TestHookTimeout: the hook's timeout covers the longest hold, three
// probes, two reconnects and a margin, at least 60 s, for one job or for
// every call of the batch.
func TestHookTimeout(t *testing.T) {
	const head = "version: 1\nname: n\nagent: {command: /bin/true}\n"
	tests := []struct {
		name     string
		yaml     string
		job, all int
	}{
		{"defaults", "servers:\n  notes: {command: /bin/true}\njobs:\n  - {name: a, prompt: hi, servers: [notes]}\n", 175, 175},
		{"a server's longer hold counts for its jobs and for all", "servers:\n  notes: {command: /bin/true, max_hold: 4m}\n  other: {command: /bin/true}\n" +
			"jobs:\n  - {name: a, prompt: hi, servers: [other]}\n  - {name: b, prompt: hi, servers: [notes]}\n", 175, 295},
		{"slower probes and reconnects", "health: {probe_timeout: 10s, reconnect_timeout: 20s}\njobs:\n  - {name: a, prompt: hi}\n", 220, 220},
		{"no hold: the least", "health: {max_hold: 0}\njobs:\n  - {name: a, prompt: hi}\n", 60, 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load(writeFile(t, t.TempDir(), "night.yaml", head+tt.yaml), noEnv)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.HookTimeout(b.Jobs[0]); got != tt.job {
				t.Errorf("HookTimeout(first job) = %d, want %d", got, tt.job)
			}
			if got := b.HookTimeout(nil); got != tt.all {
				t.Errorf("HookTimeout(nil) = %d, want %d", got, tt.all)
			}
		})
	}
}
