package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/modelapi"
)

func TestOutcomeRedacted(t *testing.T) {
	const secret = "outcome-secret-value-7781"
	redact.Remember(secret)
	o := Outcome{Reason: "exit 1: " + secret, TerminalReason: secret, ResumeFailed: secret,
		API:              &modelapi.Failure{Class: modelapi.Unavailable, Reason: secret},
		Verify:           &VerifyResult{Output: secret, Err: secret},
		Unusable:         []Unusable{{Server: "notes", Why: secret}},
		PermissionDenied: []PermissionDenied{{ToolName: "mcp__x__y", Message: secret, DecisionReason: secret}}}
	r := o.Redacted()
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), secret) {
		t.Errorf("the redacted outcome holds the secret: %s", b)
	}
	if orig, _ := json.Marshal(o); strings.Count(string(orig), secret) != 9 {
		t.Errorf("the original outcome was changed: %s", orig)
	}
	if r.Unusable[0].Server != "notes" || r.API.Class != modelapi.Unavailable {
		t.Errorf("structured fields changed: %+v", r)
	}
}
