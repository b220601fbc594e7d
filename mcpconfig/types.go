// Package mcpconfig finds and reads MCP server definitions the way Claude
// Code does, so that nightwatch probes exactly the server a session would
// start: same command, args, environment, URL and headers.
package mcpconfig

import (
	"encoding/json"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

// Transport is how Claude Code talks to a server.
type Transport string

const (
	Stdio Transport = "stdio"
	HTTP  Transport = "http" // Streamable HTTP; "streamable-http" is read as this
	SSE   Transport = "sse"  // the legacy HTTP+SSE transport
	WS    Transport = "ws"   // exists in Claude Code; nightwatch cannot probe it
)

// Scope names where a definition came from, in Claude Code's words.
type Scope string

const (
	ScopeExplicit      Scope = "explicit"               // NIGHTWATCH_MCP_CONFIG / --config
	ScopeLocal         Scope = "local"                  // ~/.claude.json projects["<cwd>"].mcpServers
	ScopeProject       Scope = "project"                // <cwd>/.mcp.json
	ScopeProjectLocal  Scope = "project-settings-local" // <cwd>/.claude/settings.local.json
	ScopeProjectShared Scope = "project-settings"       // <cwd>/.claude/settings.json
	ScopeUser          Scope = "user"                   // ~/.claude.json top-level mcpServers
	ScopeUserSettings  Scope = "user-settings"          // ~/.claude/settings.json
)

// Server is one resolved MCP server definition, with ${VAR} references
// already expanded.
type Server struct {
	Name      string            `json:"name"`
	Transport Transport         `json:"transport"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// Source is the absolute path of the file that defined the server.
	Source string `json:"source"`
	Scope  Scope  `json:"scope"`
	// Missing lists ${VAR} references that had no value and no default;
	// like Claude Code, the literal text is left in place.
	Missing []string `json:"missing,omitempty"`
	// Raw is the entry exactly as written, before expansion, so callers can
	// keep fields nightwatch does not model (timeout, alwaysLoad, …).
	Raw json.RawMessage `json:"-"`
}

// Definition is one place a server name is defined.
type Definition struct {
	Source string `json:"source"`
	Scope  Scope  `json:"scope"`
}

// Problem is a config file nightwatch could not use. Explicit files that are
// missing or broken must be reported every time: silently treating them as
// "no config" is the article's trap.
type Problem struct {
	Path     string `json:"path"`
	Explicit bool   `json:"explicit"`
	Err      error  `json:"-"`
	Message  string `json:"message"`
}

func (p Problem) Error() string { return p.Message }

// Resolved is the outcome of a search: the winning definition of every name,
// the definitions each winner shadows, and every file problem met.
type Resolved struct {
	Servers  map[string]*Server      `json:"servers"`
	Names    []string                `json:"names"` // in precedence order of first appearance
	Shadowed map[string][]Definition `json:"shadowed,omitempty"`
	Searched []string                `json:"searched"`
	Problems []Problem               `json:"problems,omitempty"`
	// Dropped are entries Claude Code would silently drop (a url with no
	// type, an http entry with no url), keyed by name, with the reason and
	// the file. A dropped entry never wins: a weaker definition of the same
	// name may still be in Servers, and then this explains why it won.
	Dropped map[string]string `json:"dropped,omitempty"`
}

// Options says where to search and which environment expands ${VAR}.
type Options struct {
	// Cwd is the session's working directory (the hook payload's cwd).
	Cwd string
	// Home is the user's home directory.
	Home string
	// ConfigDir is Claude Code's CLAUDE_CONFIG_DIR when set: it moves
	// ~/.claude.json to <ConfigDir>/.claude.json and ~/.claude/settings.json
	// to <ConfigDir>/settings.json, and the search follows.
	ConfigDir string
	// Explicit, when non-empty, replaces the search with these files.
	Explicit []string
	// Getenv looks variables up for ${VAR} expansion (pass os.LookupEnv for
	// the process environment). nil means an empty environment: defaults of
	// ${VAR:-default} apply, and a bare ${VAR} stays literal and is listed
	// in Server.Missing, so a forgotten Getenv is visible, not silent.
	Getenv func(string) (string, bool)
}

// Secrets are the values of the definition that must never be shown:
// every header value, and the credential alone of a value such as
// "Bearer <token>", which a server may echo without its scheme word; an
// env value when its name is sensitive (NOTES_TOKEN) or the value looks
// like a credential (redact.SecretSegment). An ordinary word in a plain
// variable (MODE: legacy) is not a secret: redacting it would hide every
// "legacy" in every message.
func (s *Server) Secrets() []string {
	var out []string
	for k, v := range s.Env {
		if redact.SensitiveName(k) || redact.SecretSegment(v) {
			out = append(out, v)
		}
	}
	for _, v := range s.Headers {
		out = append(out, v)
		if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
			out = append(out, strings.TrimSpace(cred))
		}
	}
	return out
}
