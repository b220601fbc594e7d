package supervisor

import (
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/session"
	"github.com/nightwatch-dev/nightwatch/supervisor/plan"
)

// The summary (the terminal's and the notification's) says why a job
// failed, a denial included, which servers a job ran without, and which
// jobs' work was verified.
func TestSummaryShowsDenialsAndVerification(t *testing.T) {
	s := &NightSummary{RunID: "r", Jobs: []plan.JobResult{
		{Name: "locked", Status: StatusFailed, Attempts: 1, Reason: "permission denied: mcp__web__echo (not allowed for this job)",
			Outcome: &session.Outcome{Status: session.Failed, Denied: []string{"mcp__web__echo"}}},
		{Name: "checked", Status: StatusDone, Attempts: 2,
			Outcome: &session.Outcome{Status: session.Done, Verify: &session.VerifyResult{OK: true}}},
		{Name: "anyway", Status: StatusDone, Attempts: 1, Reason: "ran without notes",
			Outcome: &session.Outcome{Status: session.Done}},
	}}
	var b strings.Builder
	PrintSummary(&b, s)
	for _, want := range []string{"permission denied: mcp__web__echo (not allowed for this job)", "checked  done    2", "verified", "ran without notes"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
