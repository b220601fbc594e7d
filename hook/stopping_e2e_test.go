package hook_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/sessionstop"
	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// TestClaudeStoppingSessionIsNoWitness: in a session nightwatch is
// stopping (the stopper's marker is in the attempt's folder), or whose
// owner is gone (a worker SIGKILLed), a stdio server that dies under a call
// is the stop's doing, not the server's: the real CLI runs
// PostToolUseFailure with "Connection closed", and the hook records
// nothing, and says so.
func TestClaudeStoppingSessionIsNoWitness(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		for _, tc := range []struct {
			name string
			env  func(t *testing.T) []string
			want string // what the hook's log says
		}{
			{"stopping", func(t *testing.T) []string {
				dir := t.TempDir()
				if err := sessionstop.Announce(dir); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(dir, statedir.AttemptStopping)); err != nil {
					t.Fatal(err)
				}
				return []string{sessionstop.DirEnv + "=" + dir}
			}, "nightwatch is stopping this session"},
			{"owner gone", func(t *testing.T) []string {
				return []string{sessionstop.OwnerEnv + "=" + exitedProcess(t)}
			}, "is gone"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				n := newNight(t, version, map[string]any{"notes": map[string]any{"command": testkit.BuildTestServer(t)}}, true)
				log := filepath.Join(t.TempDir(), "hook.log")
				n.env = append(append(n.env, "NIGHTWATCH_LOG="+log), tc.env(t)...)
				got := n.session("stopping-"+strings.ReplaceAll(tc.name, " ", "-"), `mcp__notes__die {}`)
				// 2.1.197: "MCP error -32000: Connection closed"; 2.1.332: "Connection closed".
				wantFailed(t, got[0], "Connection closed")
				if e := n.entry("notes"); e != nil && (e.Status == healthcheck.StatusUnhealthy || e.ConsecutiveFailures > 0) {
					t.Errorf("the failure of a session that is no witness was recorded: %+v", e)
				}
				b, _ := os.ReadFile(log)
				if !strings.Contains(string(b), `"not_recorded"`) || !strings.Contains(string(b), tc.want) {
					t.Errorf("the hook's log does not say the failure was not recorded (%s):\n%s", tc.want, b)
				}
			})
		}
	})
}

// exitedProcess is the OwnerEnv value of a process that has exited.
func exitedProcess(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testkit.BuildNightwatch(t), "--version")
	proc.Prepare(cmd, time.Second)
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	owner := strconv.Itoa(cmd.Process.Pid) + ":" + proc.StartID(cmd.Process.Pid)
	_ = proc.Wait(cmd)
	return owner
}
