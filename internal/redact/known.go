package redact

import (
	"math"
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
