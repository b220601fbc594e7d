package session

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/hookexe"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
)

// The hooks of a night's sessions get the batch's whole health mapping
// (jobs.Health.Settings) on their command line, its failure threshold too.
func TestHookCommandCarriesTheBatchsSettings(t *testing.T) {
	for _, threshold := range []int{0, 1, 7} {
		b := sessionTestBatch(t)
		b.Health.FailureThreshold = threshold
		s := b.Health.Settings()
		got := sessionTestSplit(t, hookCommand(Spec{Batch: b, Binary: "/bin/nightwatch"}, Files{Cache: "/c", MCPConfig: "/m", Events: "/e"}))
		for flag, want := range map[string]string{"--ttl": s.TTL.String(), "--backoff": s.Backoff.String(),
			"--max-backoff": s.MaxBackoff.String(), "--failure-threshold": strconv.Itoa(s.FailureThreshold)} {
			i := slices.Index(got, flag)
			if i < 0 || i+1 >= len(got) || got[i+1] != want {
				t.Errorf("threshold %d: %s is not %s in %q", threshold, flag, want, got)
			}
		}
	}
}

// A night's sessions get the dedicated hook executable when it sits beside
// nightwatch and is the same build, and `nightwatch hook` when it does not
// (hookexe.Choose says why, once).
func TestHookCommandInjectsTheHookExecutable(t *testing.T) {
	nw := testkit.BuildNightwatch(t)
	alone := filepath.Join(t.TempDir(), filepath.Base(nw))
	data, err := os.ReadFile(nw)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, binary string
		want         []string
	}{
		{"beside nightwatch", nw, []string{hookexe.Path(nw), "--state"}},
		{"nightwatch alone", alone, []string{alone, "hook", "--state"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := sessionTestBatch(t)
			got := sessionTestSplit(t, hookCommand(Spec{Batch: b, Binary: tc.binary}, Files{Cache: "/c", MCPConfig: "/m", Events: "/e"}))
			if len(got) < len(tc.want) || !slices.Equal(got[:len(tc.want)], tc.want) {
				t.Errorf("hook command %q, want it to start with %q", got, tc.want)
			}
		})
	}
}
