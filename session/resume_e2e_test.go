package session

import (
	"context"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

// TestResumeRealClaude: --resume on every supported CLI version against
// the fake API. A session that ran is resumed under the same session id,
// with the short "continue" prompt; an id the CLI does not know falls
// back to a fresh session within the same attempt, saying why.
func TestResumeRealClaude(t *testing.T) {
	testkit.ForEachClaude(t, func(t *testing.T, version string) {
		api := fakeapi.Start(t)
		b := sessionTestBatch(t)
		b.Agent.Command = testkit.ClaudeBinOf(t, version)
		job := sessionTestJob("resume", "SESSION sess-resume")
		job.Cwd = t.TempDir()
		spec := sessionTestSpec(b, job, sessionTestClaudeEnv(t, api)...)
		spec.Binary = testkit.BuildNightwatch(t)

		first, _, _ := sessionTestRun(t, context.Background(), spec)
		if first.Status != Done || first.SessionID == "" {
			t.Fatalf("first session: %s %q id %q", first.Status, first.Reason, first.SessionID)
		}

		spec.Attempt = 2
		spec.Resume, spec.ResumeWhy = first.SessionID, "killed after 1m timeout"
		again, _, _ := sessionTestRun(t, context.Background(), spec)
		if again.Status != Done || again.SessionID != first.SessionID || again.ResumedFrom != first.SessionID || again.ResumeFailed != "" {
			t.Fatalf("resumed: %s %q id %q (want %q) resume failed %q", again.Status, again.Reason, again.SessionID, first.SessionID, again.ResumeFailed)
		}
		spec.Attempt = 3
		spec.Resume = "6f1d2c3b-0000-4000-8000-000000000000"
		fresh, _, _ := sessionTestRun(t, context.Background(), spec)
		if fresh.Status != Done || fresh.ResumeFailed == "" || fresh.SessionID == spec.Resume || fresh.SessionID == "" {
			t.Fatalf("unknown id: %s %q id %q resume failed %q", fresh.Status, fresh.Reason, fresh.SessionID, fresh.ResumeFailed)
		}
		if !strings.Contains(strings.ToLower(fresh.ResumeFailed), "no conversation found") {
			t.Errorf("resume failed for %q", fresh.ResumeFailed)
		}
	})
}
