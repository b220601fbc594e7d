package reconnect

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunner runs real commands through the one Runner the hook and the
// night share.
func TestRunner(t *testing.T) {
	env := map[string]string{"NIGHTWATCH_RECONNECT_NOTES": "echo restarted {server} $(date)"}
	var warnings []string
	r := &Runner{
		Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Configured: func(server string) (string, string) {
			if server == "web" {
				return "echo batch-restart {server} sk-secret-123456789012345", "servers.web.reconnect"
			}
			return "", ""
		},
		// Room for a shell to start on a busy machine; the slow command
		// below outlasts it by minutes.
		Timeout: 10 * time.Second,
		Secrets: func(string) []string { return []string{"sk-secret-123456789012345"} },
		Warn:    func(s string) { warnings = append(warnings, s) },
	}
	ctx := context.Background()
	if r.Have("other") || r.Run(ctx, "other").Attempted {
		t.Fatal("a server without a command must not be attempted")
	}
	res := r.Run(ctx, "notes")
	if !res.Attempted || !res.OK || !strings.Contains(res.Detail, "restarted notes $(date)") {
		t.Fatalf("notes: %+v", res)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "shell syntax") || !strings.Contains(warnings[0], "NIGHTWATCH_RECONNECT_NOTES") {
		t.Fatalf("want one shell-syntax warning naming the variable, got %q", warnings)
	}
	// The syntax is quoted: "($() that" would read as a stray parenthesis.
	if !strings.Contains(warnings[0], `shell syntax ("$(") that`) {
		t.Errorf("the shell syntax is not quoted: %q", warnings[0])
	}
	res = r.Run(ctx, "web")
	if !res.OK || !strings.Contains(res.Detail, "batch-restart web") || strings.Contains(res.Detail, "sk-secret") {
		t.Fatalf("web (the batch's command wins, secrets redacted): %+v", res)
	}
	// Cut by the timeout, as the detail says; a runner that waited for
	// the command would hang for ten minutes.
	env["NIGHTWATCH_RECONNECT_SLOW"] = "sleep 600"
	res = r.Run(ctx, "slow")
	if res.OK || !strings.Contains(res.Detail, "timed out after 10s") {
		t.Fatalf("slow: %+v", res)
	}
}
