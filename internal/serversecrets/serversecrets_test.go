package serversecrets

import (
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// TestRememberServers: every winning server's env and header secrets and
// the secret parts of its URL are removed from any text afterwards; its
// ordinary words stay. A nil result or server is ignored. (The secrets
// stay remembered for the rest of the test process.)
func TestRememberServers(t *testing.T) {
	RememberServers(nil)
	RememberServer(nil)
	RememberServers(&mcpconfig.Resolved{Servers: map[string]*mcpconfig.Server{
		"notes": {Env: map[string]string{"NOTES_API_KEY": "notes-k3y-Zq81", "REGION": "eu-west"}},
		"web": {URL: "https://mcp.example.com/api/mcp/s/a8F3kQ9zL2xW/mcp?transport=sse",
			Headers: map[string]string{"Authorization": "Bearer tok-Pp42Xy9w"}},
	}})
	for _, c := range []struct {
		in, gone, kept string
	}{
		{"env " + "notes-k3y-Zq81", "notes-k3y-Zq81", "env"},
		{"region eu-west", "", "eu-west"},
		{"path /api/mcp/s/a8F3kQ9zL2xW/mcp", "a8F3kQ9zL2xW", "/api/mcp/s/"},
		{"transport sse", "", "transport sse"},
		{"sent Bearer tok-Pp42Xy9w", "tok-Pp42Xy9w", "sent"},
	} {
		got := redact.String(c.in)
		if c.gone != "" && strings.Contains(got, c.gone) {
			t.Errorf("String(%q) = %q: %q left in", c.in, got, c.gone)
		}
		if !strings.Contains(got, c.kept) {
			t.Errorf("String(%q) = %q: %q removed", c.in, got, c.kept)
		}
	}
}
