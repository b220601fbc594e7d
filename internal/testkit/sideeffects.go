package testkit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/testkit/fakeapi"
)

// WantSideEffectOnce checks what the model of session saw in a retry after
// a successful side effect (the side-effect ledger's proof, on one host or
// across hosts): the first mcp__files__record ran and the retry's repeat
// was denied with its reason, both mcp__files__peek calls (a read-only
// tool) were answered, and a retry's prompt named the earlier call.
func WantSideEffectOnce(t testing.TB, api *fakeapi.Server, session string) {
	t.Helper()
	var records, peeks []string
	for _, r := range api.SessionToolResults(session) {
		switch r.ToolName {
		case "mcp__files__record":
			records = append(records, fmt.Sprintf("error=%v %s", r.IsError, r.Content))
		case "mcp__files__peek":
			if r.IsError {
				t.Errorf("%s: a read-only call was refused: %s", session, r.Content)
			}
			peeks = append(peeks, r.Content)
		}
	}
	if len(records) != 2 || !strings.HasPrefix(records[0], "error=false recorded") ||
		!strings.HasPrefix(records[1], "error=true") || !strings.Contains(records[1], "already succeeded in attempt 1") {
		t.Errorf("%s: the record calls were %q; want the first to run and the repeat denied with the reason", session, records)
	}
	if len(peeks) != 2 {
		t.Errorf("%s: %d peeks answered, want 2 (a read-only tool may repeat)", session, len(peeks))
	}
	var told bool
	for _, o := range api.Openings(session) {
		told = told || strings.Contains(o, "already made these calls") &&
			strings.Contains(o, `mcp__files__record {"file":`) && strings.Contains(o, `"text":"ordered once"}`)
	}
	if !told {
		t.Errorf("%s: the retry's prompt does not name the earlier call: %q", session, api.Openings(session))
	}
}
