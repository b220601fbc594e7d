package mcpconfig

import "encoding/json"

// ParseEntry reads one mcpServers entry (a JSON object) exactly as Resolve
// does: the transport is decided by Claude Code's rules and ${VAR} is
// expanded with getenv in command, args, env values, url and header values.
// It returns the server, or the reason Claude Code would silently drop the
// entry (a url with no type, an unknown type, …), or an error for a
// malformed entry. It exists so that other readers of server definitions
// (the batch file) judge an entry the way a session will.
func ParseEntry(name string, raw json.RawMessage, getenv func(string) (string, bool)) (srv *Server, dropped string, err error) {
	r := parseEntry(name, raw, getenv)
	return r.server, r.dropped, r.err
}
