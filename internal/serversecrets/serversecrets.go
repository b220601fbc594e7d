// Package serversecrets tells the redactor (internal/redact) the secrets
// of the MCP servers a config defines: their env and header values and
// the secret parts of their URLs (internal/redacturl). It is apart from
// internal/secrets, which remembers a process's own environment, so that
// the hook's hot path (nightwatch-hook), which reads no MCP config, links
// no URL parser; the whole hook, status, probe and a loaded batch call it.
//
// It only remembers; it never stores, prints or passes a value on.
package serversecrets

import (
	"github.com/nightwatch-dev/nightwatch/internal/redact"
	"github.com/nightwatch-dev/nightwatch/internal/redacturl"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// RememberServers remembers the secrets of every server an MCP config
// search found, the winners and nothing else (a shadowed definition is
// never started or called). A nil result is ignored.
func RememberServers(r *mcpconfig.Resolved) {
	if r == nil {
		return
	}
	for _, s := range r.Servers {
		RememberServer(s)
	}
}

// RememberServer remembers one server definition's secrets: its env and
// header values and the secret parts of its URL. A nil server is ignored.
func RememberServer(s *mcpconfig.Server) {
	if s == nil {
		return
	}
	redact.Remember(s.Secrets()...)
	if s.URL != "" {
		redacturl.Remember(s.URL)
	}
}
