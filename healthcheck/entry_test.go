package healthcheck

import (
	"encoding/json"
	"strings"
	"testing"
)

// The article's example file, byte for byte as it documents it.
const articleFile = `{
  "version": 1,
  "servers": {
    "obsidian": {
      "status": "healthy",
      "checkedAt": 1753666200000,
      "expiresAt": 1753666320000,
      "failureCount": 0,
      "lastError": null,
      "lastFailureCode": null,
      "nextRetryAt": 1753666200000,
      "lastRestoredAt": 1753666200000,
      "source": "~/.claude/settings.json"
    },
    "agentmemory": {
      "status": "unhealthy",
      "checkedAt": 1753665900000,
      "expiresAt": 1753665900000,
      "failureCount": 3,
      "lastError": "ECONNREFUSED 127.0.0.1:3001",
      "lastFailureCode": "transport",
      "nextRetryAt": 1753666020000,
      "lastRestoredAt": null
    },
    "old": {"status": "unhealthy", "lastFailureCode": 503, "nextRetryAt": 1.7536660200e12,
            "failureCount": 1, "restoredBy": "reconnect-command", "customField": {"a": [1, 2]}}
  },
  "writtenBy": "mcp-health-check.js"
}`

func TestReadsArticleFormat(t *testing.T) {
	f, err := parseFile("cache.json", []byte(articleFile))
	if err != nil {
		t.Fatal(err)
	}
	ob, am, old := f.Servers["obsidian"], f.Servers["agentmemory"], f.Servers["old"]
	if ob.Status != StatusHealthy || ob.ExpiresAt != 1753666320000 || ob.Source != "~/.claude/settings.json" || ob.LastError != "" {
		t.Errorf("obsidian: %+v", ob)
	}
	if am.FailureCount != 3 || am.LastError != "ECONNREFUSED 127.0.0.1:3001" || am.LastFailureCode != CodeTransport || am.LastRestoredAt != 0 {
		t.Errorf("agentmemory: %+v", am)
	}
	if old.LastFailureCode != CodeUnavailable || old.ArticleCode() != Article503 || old.NextRetryAt != 1753666020000 || old.RestoredBy != "reconnect-command" {
		t.Errorf("old: %+v", old)
	}
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{`"customField":{"a":[1,2]}`, `"writtenBy":"mcp-health-check.js"`, `"lastError":null`,
		`"version":1`, `"lastRestoredAt":null`} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("written file lost %s:\n%s", keep, out)
		}
	}
	again, err := parseFile("cache.json", out)
	if err != nil {
		t.Fatalf("nightwatch cannot read its own file: %v\n%s", err, out)
	}
	if again.Servers["agentmemory"].FailureCount != 3 || again.Servers["old"].Extra["customField"] == nil {
		t.Errorf("round trip lost data: %+v", again.Servers)
	}
}

// TestFailureCodesBothDirections: nightwatch writes the article's
// lastFailureCode (a number or "transport") and its class beside it; it
// reads the article's file, its own, and the previous release's (which
// put its class words in lastFailureCode).
func TestFailureCodesBothDirections(t *testing.T) {
	reads := []struct {
		name  string
		entry string
		class FailureCode
		code  ArticleCode
	}{
		{"article number", `{"status":"unhealthy","lastFailureCode":429}`, CodeRateLimited, Article429},
		{"article 403 kept", `{"status":"unhealthy","lastFailureCode":403}`, CodeAuth, Article403},
		{"article transport", `{"status":"unhealthy","lastFailureCode":"transport"}`, CodeTransport, ArticleTransport},
		{"previous release", `{"status":"unhealthy","lastFailureCode":"unavailable"}`, CodeUnavailable, Article503},
		{"previous release, timeout", `{"status":"unhealthy","lastFailureCode":"timeout"}`, CodeTimeout, ArticleTransport},
		{"previous release, auth", `{"status":"unhealthy","lastFailureCode":"auth","lastError":"403 Forbidden"}`, CodeAuth, Article403},
		{"this release", `{"status":"unhealthy","lastFailureCode":503,"failureClass":"unavailable"}`, CodeUnavailable, Article503},
		{"this release, not-mcp", `{"status":"unhealthy","lastFailureCode":"transport","failureClass":"not-mcp"}`, CodeNotMCP, ArticleTransport},
		{"healthy", `{"status":"healthy","lastFailureCode":null}`, "", ""},
	}
	for _, tt := range reads {
		t.Run(tt.name, func(t *testing.T) {
			var e Entry
			if err := json.Unmarshal([]byte(tt.entry), &e); err != nil {
				t.Fatal(err)
			}
			if e.LastFailureCode != tt.class || e.ArticleCode() != tt.code {
				t.Fatalf("read class %q code %q, want %q %q", e.LastFailureCode, e.ArticleCode(), tt.class, tt.code)
			}
			out, _ := json.Marshal(e)
			var raw map[string]json.RawMessage
			_ = json.Unmarshal(out, &raw)
			wantCode, _ := json.Marshal(tt.code)
			if string(raw["lastFailureCode"]) != string(wantCode) {
				t.Errorf("wrote lastFailureCode %s, want %s (%s)", raw["lastFailureCode"], wantCode, out)
			}
			if tt.class != "" && string(raw["failureClass"]) != `"`+string(tt.class)+`"` {
				t.Errorf("wrote failureClass %s, want %q (%s)", raw["failureClass"], tt.class, out)
			}
		})
	}
	// Writing: every class nightwatch records becomes one of the article's
	// values, never a nightwatch word.
	s := DefaultSettings()
	for _, c := range FailureCodes() {
		e := s.MarkUnhealthy(nil, t0, Failure{Code: c, Reason: "x"})
		out, _ := json.Marshal(e)
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(out, &raw)
		switch string(raw["lastFailureCode"]) {
		case "401", "403", "429", "503", `"transport"`:
		default:
			t.Errorf("class %s wrote lastFailureCode %s", c, raw["lastFailureCode"])
		}
	}
}

func TestCorruptFiles(t *testing.T) {
	for _, in := range []string{``, `   `, `{`, `[]`, `null`, `{"version":2,"servers":{}}`, "\x00\x01"} {
		if _, err := parseFile("c.json", []byte(in)); err == nil {
			t.Errorf("parseFile(%q) = nil error, want corrupt", in)
		}
	}
	// Tolerated: no version, null entries, lastError not a string.
	for _, in := range []string{`{"servers":{}}`, `{"version":1,"servers":{"a":null}}`, `{"version":1}`,
		`{"version":1,"servers":{"a":{"status":"healthy","lastError":{"x":1}}}}`} {
		if _, err := parseFile("c.json", []byte(in)); err != nil {
			t.Errorf("parseFile(%q) = %v, want ok", in, err)
		}
	}
}

func FuzzCacheFile(f *testing.F) {
	f.Add([]byte(articleFile))
	f.Add([]byte(`{"version":1,"servers":{"a":{"status":"healthy","expiresAt":"12"}}}`))
	f.Add([]byte(`{"version":1,"servers":{"a":{"lastFailureCode":1e400}}}`))
	f.Add([]byte(`{"version":1,"servers":{"a":{"status":"unhealthy","lastFailureCode":503,"failureClass":"unavailable","consecutiveFailures":2,"witness":"calls","trialAt":1}}}`))
	f.Add([]byte(`{"version":1,"servers":{"a":{"lastFailureCode":"unavailable","failureClass":7}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := parseFile("fuzz.json", data)
		if err != nil {
			return
		}
		out, err := json.Marshal(file)
		if err != nil {
			t.Fatalf("cannot write what was read: %v", err)
		}
		if _, err := parseFile("fuzz.json", out); err != nil {
			t.Fatalf("cannot read what was written: %v\n%s", err, out)
		}
	})
}
