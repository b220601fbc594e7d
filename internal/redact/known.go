package redact

import (
	"math"
	"net/url"
	"strings"
	"sync"
)

// known holds every secret this process has been told of (Remember), so
// that String removes it from any text, whoever calls String and whether or
// not the caller knows that secret: a crashing server that prints another
// server's key must not carry it into the cache, a log or the model's deny
// reason.
var known struct {
	sync.RWMutex
	secrets []string
	seen    map[string]bool
}

// Remember adds secrets to the ones String removes in this process, from
// now on. Values shorter than MinSecretLen are ignored (as in String).
// Each process entry point (the hook, the night, the operator commands)
// calls it once with everything it can read: env_file values, sensitive
// variables of the batch and the process environment, every server's env
// and header values, URL credentials, paths and queries.
func Remember(secrets ...string) {
	known.Lock()
	defer known.Unlock()
	if known.seen == nil {
		known.seen = map[string]bool{}
	}
	for _, s := range secrets {
		if len(s) < MinSecretLen || known.seen[s] {
			continue
		}
		known.seen[s] = true
		known.secrets = append(known.secrets, s)
	}
}

// RememberEnv remembers the value of every sensitive-named variable
// (SensitiveName) of a KEY=VALUE list, except the shell's and the
// desktop's own variables whose names only look sensitive (NotCredential):
// remembering PWD would redact the working folder from every path shown,
// XDG_SESSION_CLASS=user every "user".
func RememberEnv(env []string) {
	var values []string
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && SensitiveName(k) && !NotCredential(k) {
			values = append(values, v)
		}
	}
	Remember(values...)
}

// notCredentialNames are variables every shell or desktop session sets
// whose names hold a sensitive word (PWD, SESSION, KEY, AUTH) but whose
// values are paths, ids and words, never credentials.
var notCredentialNames = map[string]bool{
	"PWD": true, "OLDPWD": true, "DESKTOP_SESSION": true, "SESSION_MANAGER": true,
	"TERM_SESSION_ID": true, "DBUS_SESSION_BUS_ADDRESS": true, "KEYTIMEOUT": true,
	"SSH_AUTH_SOCK": true, "XAUTHORITY": true, "GPG_AGENT_INFO": true,
}

// NotCredential reports a variable whose name looks sensitive but whose
// value is a path, an id or a word (notCredentialNames, XDG_SESSION_*).
func NotCredential(name string) bool {
	return notCredentialNames[name] || strings.HasPrefix(name, "XDG_SESSION_")
}

// RememberURL remembers the parts of a configured URL that may carry a
// secret: the user-info password and user; every path segment that looks
// like a key (SecretSegment: secret-URL MCP services put the key in the
// path, /api/mcp/s/<secret>/mcp); every query value of a sensitive name
// (?key=, ?token=) or that looks like a key. Ordinary segments and values
// (/v1/workspace/mcp, ?transport=sse) are not remembered: String would
// otherwise hide "workspace" from every text. URL still elides them all
// from a URL shown or stored.
func RememberURL(raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		// Unparsable: the whole string is the only safe unit.
		Remember(raw)
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
		if seg != "" && !plainPathWord(seg) && SecretSegment(un) {
			values = append(values, seg)
			if un != seg {
				values = append(values, un)
			}
		}
	}
	query := false
	for k, vs := range u.Query() {
		for _, v := range vs {
			if SensitiveName(k) || SecretSegment(v) {
				values = append(values, v)
				query = true
			}
		}
	}
	if query {
		values = append(values, u.RawQuery)
	}
	Remember(values...)
}

// tokenPrefixes start the well-known credential shapes (OpenAI/Anthropic,
// Stripe, GitHub, GitLab, Slack, Hugging Face, Google OAuth, AWS, JWT).
var tokenPrefixes = []string{"sk-", "sk_", "pk_", "rk_", "ghp_", "gho_", "ghs_", "ghu_", "github_pat_",
	"glpat-", "xoxb-", "xoxp-", "xoxa-", "hf_", "ya29.", "AKIA", "eyJ"}

// SecretSegment reports whether a URL path segment or query value looks
// like a credential rather than a word: a known token shape; 10 bytes or
// more mixing at least 2 digits and 2 letters (a8F3kQ9zL2xW, a UUID, a
// hex key); or a long random-looking string (20 bytes with mixed case or
// digits and high entropy, or 32 bytes of anything). "workspace",
// "v1beta", "2024-06-01" and "my-project" are words.
func SecretSegment(s string) bool {
	if len(s) < 8 {
		return false
	}
	for _, p := range tokenPrefixes {
		if strings.HasPrefix(s, p) && len(s) >= len(p)+8 {
			return true
		}
	}
	var digits, letters, upper, lower int
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z':
			letters++
			lower++
		case c >= 'A' && c <= 'Z':
			letters++
			upper++
		}
	}
	switch {
	case len(s) >= 10 && digits >= 2 && letters >= 2:
		return true
	case len(s) >= 32:
		return true
	case len(s) >= 20 && (digits > 0 || (upper > 0 && lower > 0)) && entropy(s) >= 3.5:
		return true
	}
	return false
}

// entropy is s's Shannon entropy in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

func remembered() []string {
	known.RLock()
	defer known.RUnlock()
	// Full slice expression: a caller that appends gets its own array,
	// never the shared one's spare room (a race with the next Remember).
	return known.secrets[:len(known.secrets):len(known.secrets)]
}

// forgetAll clears the remembered secrets (tests only).
func forgetAll() {
	known.Lock()
	defer known.Unlock()
	known.secrets, known.seen = nil, nil
}

// plainPathWords are the URL path segments MCP endpoints use that carry
// nothing secret; any other segment may be a key and is elided.
var plainPathWords = map[string]bool{
	"mcp": true, "sse": true, "api": true, "message": true, "messages": true, "stream": true,
	"rpc": true, "jsonrpc": true, "http": true, "v1": true, "v2": true, "v3": true, "server": true,
	"servers": true, "public": true, "remote": true, "events": true,
}

func plainPathWord(seg string) bool { return plainPathWords[strings.ToLower(seg)] }

// URL returns a configured URL as it may be shown or stored: scheme, host
// and port, then the path only when every segment is a well-known endpoint
// word ("/mcp", "/api/mcp", "/sse"); any other path becomes "/…". User
// info, query and fragment are always elided. A URL that does not parse is
// shown as Marker.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return Marker
	}
	out := u.Scheme + "://" + u.Host
	if u.User != nil {
		out = u.Scheme + "://" + Marker + "@" + u.Host
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
