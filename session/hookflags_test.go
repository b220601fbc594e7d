package session

import (
	"slices"
	"strconv"
	"testing"
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
