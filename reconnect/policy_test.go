package reconnect

import "testing"

var _ Policy = DefaultPolicy

func TestDefaultPolicy(t *testing.T) {
	tests := []struct {
		failure        Failure
		withCommand    Action
		withoutCommand Action
	}{
		{Auth, Reconnect, Wait},
		{RateLimited, Wait, Wait}, // never reconnect on 429: the vicious circle
		{Unavailable, Reconnect, Wait},
		{Transport, Reconnect, Wait},
		{Timeout, Reconnect, Wait},
		{SessionExpired, Reconnect, Wait},
		{NotMCP, Reconnect, Wait},
		{ToolError, None, None},
		{Unknown, None, None},
		{Failure("something-new"), None, None},
	}
	covered := map[Failure]bool{}
	for _, tt := range tests {
		covered[tt.failure] = true
		if got := DefaultPolicy(tt.failure, true); got != tt.withCommand {
			t.Errorf("DefaultPolicy(%q, command) = %q, want %q", tt.failure, got, tt.withCommand)
		}
		if got := DefaultPolicy(tt.failure, false); got != tt.withoutCommand {
			t.Errorf("DefaultPolicy(%q, no command) = %q, want %q", tt.failure, got, tt.withoutCommand)
		}
	}
	for _, f := range Failures() {
		if !covered[f] {
			t.Errorf("Failure %q is missing from this table", f)
		}
		if _, ok := defaultPolicy[f]; !ok {
			t.Errorf("Failure %q has no row in defaultPolicy", f)
		}
	}
	if len(defaultPolicy) != len(Failures()) {
		t.Errorf("defaultPolicy has %d rows, Failures() lists %d", len(defaultPolicy), len(Failures()))
	}
}
