// Package redacturl redacts configured URLs (an MCP server's, a
// webhook's): Remember tells the redactor (internal/redact) the parts of
// one that may carry a secret, Elide shows one with those parts left out.
// It is apart from internal/redact because it needs a URL parser
// (net/url, whose net/netip initialisation costs every process that links
// it, however it is used): the hook's hot path (nightwatch-hook), which
// redacts text but reads no URL, links redact and not this.
package redacturl

import (
	"net/url"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

// Remember remembers the parts of a configured URL that may carry a
// secret: the user-info password and user; every path segment that looks
// like a key (redact.SecretSegment: secret-URL MCP services put the key
// in the path, /api/mcp/s/<secret>/mcp); every query value of a sensitive
// name (?key=, ?token=) or that looks like a key. Ordinary segments and
// values (/v1/workspace/mcp, ?transport=sse) are not remembered:
// redact.String would otherwise hide "workspace" from every text. Elide
// still elides them all from a URL shown or stored.
func Remember(raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		// Unparsable: the whole string is the only safe unit.
		redact.Remember(raw)
		return
	}
	var values []string
	if u.User != nil {
		values = append(values, u.User.Username())
		if p, ok := u.User.Password(); ok {
			values = append(values, p)
		}
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		un, err := url.PathUnescape(seg)
		if err != nil {
			un = seg
		}
		if seg != "" && !plainPathWord(seg) && redact.SecretSegment(un) {
			values = append(values, seg)
			if un != seg {
				values = append(values, un)
			}
		}
	}
	query := false
	for k, vs := range u.Query() {
		for _, v := range vs {
			if redact.SensitiveName(k) || redact.SecretSegment(v) {
				values = append(values, v)
				query = true
			}
		}
	}
	if query {
		values = append(values, u.RawQuery)
	}
	redact.Remember(values...)
}

// plainPathWords are the URL path segments MCP endpoints use that carry
// nothing secret; any other segment may be a key and is elided.
var plainPathWords = map[string]bool{
	"mcp": true, "sse": true, "api": true, "message": true, "messages": true, "stream": true,
	"rpc": true, "jsonrpc": true, "http": true, "v1": true, "v2": true, "v3": true, "server": true,
	"servers": true, "public": true, "remote": true, "events": true,
}

func plainPathWord(seg string) bool { return plainPathWords[strings.ToLower(seg)] }

// Elide returns a configured URL as it may be shown or stored: scheme, host
// and port, then the path only when every segment is a well-known endpoint
// word ("/mcp", "/api/mcp", "/sse"); any other path becomes "/…". User
// info, query and fragment are always elided. A URL that does not parse is
// shown as redact.Marker.
func Elide(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return redact.Marker
	}
	out := u.Scheme + "://" + u.Host
	if u.User != nil {
		out = u.Scheme + "://" + redact.Marker + "@" + u.Host
	}
	path := u.EscapedPath()
	plain := true
	for _, seg := range strings.Split(path, "/") {
		if seg != "" && !plainPathWord(seg) {
			plain = false
			break
		}
	}
	switch {
	case path == "" || path == "/":
		out += path
	case plain:
		out += path
	default:
		out += "/…"
	}
	if u.RawQuery != "" || u.ForceQuery {
		out += "?…"
	}
	return out
}
