// Package reconnect finds, parses and runs the command that brings a failed
// MCP server back ("pm2 restart {server}"): Runner is the one way the hook
// and the night run it. When running it makes sense at all is the reconnect
// policy's call, which lives beside the failure classes in healthcheck.
//
// It keeps the configuration of the Node original (ECC_MCP_RECONNECT_<KEY>,
// ECC_MCP_RECONNECT_COMMAND, the {server} placeholder) and fixes its traps:
// the command runs without a shell, so neither $(…) in the command nor a
// hostile server name becomes code; it is bounded by a timeout that kills
// its whole process group; its output is bounded and redacted; and a 429
// never triggers a reconnect (healthcheck.DefaultPolicy).
package reconnect

import "strings"

// Variable names, most specific first. The ECC_ names are read so that an
// existing everything-claude-code setup keeps working unchanged.
const (
	serverPrefix      = "NIGHTWATCH_RECONNECT_"
	legacyPrefix      = "ECC_MCP_RECONNECT_"
	globalVariable    = "NIGHTWATCH_RECONNECT_COMMAND"
	legacyGlobalVar   = "ECC_MCP_RECONNECT_COMMAND"
	globalKeyConflict = "COMMAND" // see CommandFor
)

// EnvKey turns a server name into the suffix of its per-server variable,
// by the Node original's rule: upper-case, then every character outside
// [A-Z0-9] becomes "_" ("agent-memory.v2" → "AGENT_MEMORY_V2"). A
// character outside the Basic Multilingual Plane becomes "__", as it does
// in JavaScript, where it is two UTF-16 code units. (JavaScript's
// multi-letter upper-casings, "ß" → "SS", are not reproduced.)
func EnvKey(server string) string {
	var key strings.Builder
	key.Grow(len(server))
	for _, r := range server {
		switch {
		case 'a' <= r && r <= 'z':
			key.WriteRune(r - 'a' + 'A')
		case 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			key.WriteRune(r)
		case r > 0xFFFF:
			key.WriteString("__")
		default:
			key.WriteByte('_')
		}
	}
	return key.String()
}

// CommandFor returns the reconnect command configured for server and the
// name of the variable it came from. The first variable that is set and
// not blank wins:
//
//	NIGHTWATCH_RECONNECT_<KEY>    this server, nightwatch's name
//	ECC_MCP_RECONNECT_<KEY>       this server, the Node original's name
//	NIGHTWATCH_RECONNECT_COMMAND  every server
//	ECC_MCP_RECONNECT_COMMAND     every server, the Node original's name
//
// KEY is EnvKey(server). getenv is os.LookupEnv in production. Nothing
// found: ("", "").
//
// A server literally named "command" has KEY "COMMAND", so its own
// variable and the global one are the same; it simply gets the global
// command, as it did in the Node original.
func CommandFor(server string, getenv func(string) (string, bool)) (command, source string) {
	key := EnvKey(server)
	candidates := []string{serverPrefix + key, legacyPrefix + key, globalVariable, legacyGlobalVar}
	if key == "" || key == globalKeyConflict {
		candidates = candidates[2:]
	}
	for _, name := range candidates {
		if value, ok := getenv(name); ok && strings.TrimSpace(value) != "" {
			return value, name
		}
	}
	return "", ""
}
