package healthcheck

import (
	"encoding/json"
	"testing"
)

var _ Policy = DefaultPolicy

func TestDefaultPolicy(t *testing.T) {
	tests := []struct {
		code           FailureCode
		withCommand    Action
		withoutCommand Action
	}{
		{CodeAuth, ActionReconnect, ActionWait},
		{CodeRateLimited, ActionWait, ActionWait}, // never reconnect on 429: the vicious circle
		{CodeUnavailable, ActionReconnect, ActionWait},
		{CodeTransport, ActionReconnect, ActionWait},
		{CodeTimeout, ActionReconnect, ActionWait},
		{CodeSessionExpired, ActionReconnect, ActionWait},
		{CodeNotMCP, ActionReconnect, ActionWait},
		{CodeToolError, ActionNone, ActionNone},
		{CodeUnknown, ActionNone, ActionNone},
		{FailureCode("something-new"), ActionNone, ActionNone},
	}
	covered := map[FailureCode]bool{}
	for _, tt := range tests {
		covered[tt.code] = true
		if got := DefaultPolicy(tt.code, true); got != tt.withCommand {
			t.Errorf("DefaultPolicy(%q, command) = %q, want %q", tt.code, got, tt.withCommand)
		}
		if got := DefaultPolicy(tt.code, false); got != tt.withoutCommand {
			t.Errorf("DefaultPolicy(%q, no command) = %q, want %q", tt.code, got, tt.withoutCommand)
		}
	}
	for _, c := range FailureCodes() {
		if !covered[c] {
			t.Errorf("class %q is missing from this table", c)
		}
		if _, ok := defaultPolicy[c]; !ok {
			t.Errorf("class %q has no row in defaultPolicy", c)
		}
	}
	if len(defaultPolicy) != len(FailureCodes()) {
		t.Errorf("defaultPolicy has %d rows, FailureCodes() lists %d", len(defaultPolicy), len(FailureCodes()))
	}
}

func TestArticleCodes(t *testing.T) {
	tests := []struct {
		class  FailureCode
		reason string
		want   ArticleCode
		json   string
	}{
		{CodeAuth, "401 Unauthorized", Article401, "401"},
		{CodeAuth, "HTTP 403 Forbidden", Article403, "403"},
		{CodeRateLimited, "", Article429, "429"},
		{CodeUnavailable, "", Article503, "503"},
		{CodeTransport, "", ArticleTransport, `"transport"`},
		{CodeTimeout, "", ArticleTransport, `"transport"`},
		{CodeSessionExpired, "", ArticleTransport, `"transport"`},
		{CodeNotMCP, "", ArticleTransport, `"transport"`},
		{"", "", "", "null"},
	}
	for _, tt := range tests {
		got := ArticleCodeOf(tt.class, tt.reason)
		if got != tt.want {
			t.Errorf("ArticleCodeOf(%q, %q) = %q, want %q", tt.class, tt.reason, got, tt.want)
		}
		b, _ := json.Marshal(got)
		if string(b) != tt.json {
			t.Errorf("%q marshals as %s, want %s", got, b, tt.json)
		}
	}
	for stored, want := range map[string]FailureCode{"401": CodeAuth, "403": CodeAuth, "429": CodeRateLimited,
		"503": CodeUnavailable, "transport": CodeTransport, "unavailable": CodeUnavailable,
		"rate-limited": CodeRateLimited, "session-expired": CodeSessionExpired, "418": CodeUnknown, "": ""} {
		if got := ClassOfStored(stored); got != want {
			t.Errorf("ClassOfStored(%q) = %q, want %q", stored, got, want)
		}
	}
}
