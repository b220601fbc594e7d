package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/launch"
)

// TestRestartBlock: a stdio server's restart: block, its bounds, and bad
// values refused with the line and the field.
func TestRestartBlock(t *testing.T) {
	const head = "version: 1\nname: n\nagent: {command: /bin/true}\n"
	const job = "jobs:\n  - {name: a, prompt: hi, servers: [notes]}\n"
	zero, two := 0, 2
	tests := []struct {
		name    string
		yaml    string
		wantErr string
		want    launch.Bounds
	}{
		{"none: the defaults", "servers:\n  notes: {command: /bin/true}\n", "", launch.Bounds{}},
		{"all written", "servers:\n  notes:\n    command: /bin/true\n    restart: {max: 2, within: 5m, hang_after: 10m, ping_timeout: 30s}\n",
			"", launch.Bounds{Restarts: &two, Within: 5 * time.Minute, HangAfter: 10 * time.Minute, PingTimeout: 30 * time.Second}},
		{"never restarted", "servers:\n  notes:\n    command: /bin/true\n    restart: {max: 0}\n", "", launch.Bounds{Restarts: &zero}},
		{"hang check off", "servers:\n  notes:\n    command: /bin/true\n    restart: {hang_after: off}\n", "", launch.Bounds{NoHang: true}},
		{"hang check off as 0", "servers:\n  notes:\n    command: /bin/true\n    restart: {hang_after: 0}\n", "", launch.Bounds{NoHang: true}},
		{"unknown field", "servers:\n  notes:\n    command: /bin/true\n    restart:\n      hang_afer: 5m\n",
			`night.yaml:8: servers.notes.restart.hang_afer: unknown field`, launch.Bounds{}},
		{"max over the bound", "servers:\n  notes:\n    command: /bin/true\n    restart: {max: 1000}\n",
			"night.yaml:7: servers.notes.restart.max: must be at most 100, not 1000", launch.Bounds{}},
		{"max below 0", "servers:\n  notes:\n    command: /bin/true\n    restart: {max: -1}\n",
			"servers.notes.restart.max: must be 0 or more", launch.Bounds{}},
		{"a bound without a unit", "servers:\n  notes:\n    command: /bin/true\n    restart:\n      ping_timeout: 30\n",
			`night.yaml:8: servers.notes.restart.ping_timeout: "30" needs a unit`, launch.Bounds{}},
		{"a bound below a second", "servers:\n  notes:\n    command: /bin/true\n    restart: {hang_after: 200ms}\n",
			"servers.notes.restart.hang_after: 200ms is below 1s", launch.Bounds{}},
		{"a bound over a day", "servers:\n  notes:\n    command: /bin/true\n    restart: {within: 48h}\n",
			"servers.notes.restart.within: 48h must be between", launch.Bounds{}},
		{"not a mapping", "servers:\n  notes:\n    command: /bin/true\n    restart: 5\n",
			"servers.notes.restart", launch.Bounds{}},
		{"an http server", "servers:\n  notes:\n    type: http\n    url: http://127.0.0.1:1/mcp\n    restart: {max: 1}\n",
			"night.yaml:8: servers.notes.restart: is not used by a http server", launch.Bounds{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load(writeFile(t, t.TempDir(), "night.yaml", head+tt.yaml+job), noEnv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "night.yaml") {
					t.Fatalf("Load error %v, want %q naming the file", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := b.Server("notes").Restart
			if (got.Restarts == nil) != (tt.want.Restarts == nil) || got.Restarts != nil && *got.Restarts != *tt.want.Restarts {
				t.Errorf("Restarts = %v, want %v", got.Restarts, tt.want.Restarts)
			}
			got.Restarts, tt.want.Restarts = nil, nil
			if got != tt.want {
				t.Errorf("Restart = %+v, want %+v", got, tt.want)
			}
		})
	}
}
