// Package redact removes credentials from text nightwatch shows or stores:
// a server's stderr, a reconnect command's output, an error from an HTTP
// client. Everything that leaves nightwatch (cache, logs, hook messages,
// doctor) passes through String first.
//
// It works in two layers. Literal secrets the caller knows (the values of
// a server's sensitive env entries, its headers) are removed exactly.
// Patterns catch what nobody listed: Bearer tokens, KEY=value pairs with a
// sensitive key, well-known token shapes, URL passwords, private keys.
package redact

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Marker replaces every redacted value.
const Marker = "[REDACTED]"

// fallbackMarker is used when a caller's secret is a piece of Marker itself
// ("EDAC"), where writing Marker would print the secret. It is shorter than
// MinSecretLen, so it can never contain a secret.
const fallbackMarker = "***"

// MinSecretLen is the shortest literal secret String removes: shorter
// values ("1", "on", "dev") would shred ordinary text and are not
// credentials anyway.
const MinSecretLen = 4

// sensitiveWords are the key fragments that mark a name as holding a
// credential. PWD is on the list for "DB_PWD"; it also catches the shell's
// PWD, a harmless over-redaction.
var sensitiveWords = []string{
	"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PWD",
	"AUTH", "CREDENTIAL", "COOKIE", "SESSION",
}

// SensitiveName reports whether an env variable, header, JSON key or flag
// name looks like it holds a credential (case-insensitive substring match).
func SensitiveName(name string) bool {
	upper := strings.ToUpper(name)
	for _, word := range sensitiveWords {
		if strings.Contains(upper, word) {
			return true
		}
	}
	return false
}

// A span is a half-open byte range [start, end) of the input to redact.
type span struct{ start, end int }

// A rule finds credentials in a text and marks them. It marks only the
// credential, so that context like "Bearer " or "API_KEY=" stays readable.
//
// Rules run line by line, and only on lines that hold one of their
// triggers (lower-case ASCII): Go's regexp is far faster on short inputs,
// and most lines of a log trigger nothing. Only a rule marked wholeText
// sees the whole input and may match across lines.
type rule struct {
	triggers  []string
	wholeText bool
	find      func(text string, mark func(span))
}

// matches makes a rule's find from a regular expression; secretSpan picks
// the credential out of one match, given as submatch indexes.
func matches(expr string, secretSpan func(text string, m []int) (span, bool)) func(string, func(span)) {
	// Compiled on first use: most hook processes never redact anything,
	// and compiling at start-up cost every one of them a millisecond.
	re := sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
	return func(text string, mark func(span)) {
		for _, m := range re().FindAllStringSubmatchIndex(text, -1) {
			if sp, ok := secretSpan(text, m); ok {
				mark(sp)
			}
		}
	}
}

// group returns a secretSpan that redacts submatch n.
func group(n int) func(string, []int) (span, bool) {
	return func(_ string, m []int) (span, bool) {
		start, end := m[2*n], m[2*n+1]
		return span{start, end}, start >= 0 && end > start
	}
}

// credentialSchemes are the Authorization schemes whose credential the
// scheme rule redacts; a key=value pair whose value is just the scheme word
// ("AUTH_HEADER=Bearer …") leaves the credential to that rule.
var credentialSchemes = []string{"bearer", "basic"}

// notCredentials are words that follow "Bearer"/"Basic" in prose ("missing
// Bearer token", "Basic auth failed"); redacting them only hides the error.
var notCredentials = []string{
	"auth", "authentication", "authorization", "credentials", "error",
	"header", "realm", "required", "scheme", "token",
}

// fileExtensions end a key that is a file name, not a variable.
var fileExtensions = []string{".yaml", ".yml", ".json", ".env", ".toml", ".txt", ".md", ".log", ".sh", ".go", ".py", ".js", ".ts", ".pem", ".conf", ".cfg", ".ini", ".jsonl"}

// statusWords contain a sensitive word but open error messages, never a
// credential: "401 Unauthorized: token expired" must stay readable.
var statusWords = []string{"unauthorized", "unauthorised"}

var rules = []rule{
	// PEM private keys: keep the BEGIN/END lines (they say what was there),
	// drop the body. A block cut short by a tail still loses its body.
	{
		triggers:  []string{"private key-----"},
		wholeText: true,
		find: matches(
			`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----([\s\S]*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|\z)`,
			group(1)),
	},
	// Authorization and cookie header lines, up to the end of the line or a
	// quote (curl -H 'Authorization: …' https://… keeps the URL). For
	// Authorization the scheme word stays: "Authorization: Bearer [REDACTED]".
	{
		triggers: []string{"authorization", "cookie"},
		find: matches(
			`(?i)\b(proxy-authorization|authorization|set-cookie|cookie)[ \t]*:[ \t]*([^\r\n'"]*[^\s'"])`,
			headerValue),
	},
	// "Bearer <token>" / "Basic <base64>" anywhere: keep the scheme word.
	{
		triggers: []string{"bearer", "basic"},
		find: matches(
			`(?i)\b(?:bearer|basic)[ \t]+([A-Za-z0-9\-._~+/]+=*)`,
			schemeCredential),
	},
	// URL userinfo: https://user:pass@host → https://[REDACTED]@host. A
	// bare user is redacted too: https://<token>@github.com is common.
	{
		triggers: []string{"://"},
		find: matches(
			`\b[A-Za-z][A-Za-z0-9+.\-]*://([^\s/?#@"'<>]+)@`,
			group(1)),
	},
	// KEY=value, KEY: value, "key":"value", ?token=…&api_key=…, --api-key=…
	{
		triggers: lowerWords(sensitiveWords),
		find:     findKeyValues,
	},
	// Token shapes that are credentials wherever they appear.
	{
		triggers: []string{"sk-", "gh", "xox", "akia", "eyj"},
		find: matches(strings.Join([]string{
			`\bsk-ant-[A-Za-z0-9_\-]+`,                               // Anthropic
			`\bsk-[A-Za-z0-9_\-]{20,}`,                               // OpenAI and look-alikes
			`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}`,             // GitHub tokens
			`\bgithub_pat_[A-Za-z0-9_]{20,}`,                         // GitHub fine-grained PAT
			`\bxox[abprs]-[A-Za-z0-9\-]{10,}`,                        // Slack
			`\bAKIA[0-9A-Z]{16}\b`,                                   // AWS access key id
			`\beyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*`, // JWT
		}, "|"), group(0)),
	},
}

// headerValue redacts an Authorization or Cookie header's value, keeping an
// Authorization scheme word ("Bearer", "Basic", "Digest"…) readable.
func headerValue(s string, m []int) (span, bool) {
	name := strings.ToLower(s[m[2]:m[3]])
	start, end := m[4], m[5]
	if start < 0 || end <= start {
		return span{}, false
	}
	if strings.HasSuffix(name, "authorization") {
		// RFC 9110: credentials = auth-scheme [ 1*SP token68 / params ].
		value := s[start:end]
		if i := strings.IndexAny(value, " \t"); i > 0 {
			rest := strings.TrimLeft(value[i:], " \t")
			start = end - len(rest)
		}
	}
	return span{start, end}, true
}

// schemeCredential redacts the credential after Bearer/Basic unless it is
// an English word from an error message.
func schemeCredential(s string, m []int) (span, bool) {
	if slices.Contains(notCredentials, strings.ToLower(s[m[2]:m[3]])) {
		return span{}, false
	}
	return group(1)(s, m)
}

// findKeyValues marks the values of pairs whose key is a SensitiveName:
// KEY=value, KEY: value, "key": "value", key='value'. A quoted value is
// redacted whole (a password may hold spaces); a bare one runs to
// whitespace, a quote, a comma, '&' or ';'.
//
// It is a scanner, not a regular expression, for two reasons: a key must
// be found by walking back from its '=' or ':' (a regexp starting at every
// letter of every word is slow), and every separator is looked at, so the
// pair in "url=https://h/?token=abc" is found inside the other pair's value.
func findKeyValues(line string, mark func(span)) {
	for i := 0; i < len(line); i++ {
		if line[i] != '=' && line[i] != ':' {
			continue
		}
		key := keyBefore(line, i)
		if key == "" || !SensitiveName(key) || skipPair(line, i, key) {
			continue
		}
		if value, ok := valueAfter(line, i+1); ok {
			mark(value)
		}
	}
}

// keyBefore returns the key that ends just before the separator at sep,
// stepping back over blanks and one closing quote: `"api_key" :`.
func keyBefore(line string, sep int) string {
	end := sep
	for end > 0 && (line[end-1] == ' ' || line[end-1] == '\t') {
		end--
	}
	if end > 0 && (line[end-1] == '"' || line[end-1] == '\'') {
		end--
	}
	start := end
	for start > 0 && isKeyByte(line[start-1]) {
		start--
	}
	return line[start:end]
}

func isKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == '-'
}

// skipPair reports sensitive-looking pairs that hold no credential of their
// own, or whose credential another rule redacts more readably.
func skipPair(line string, sep int, key string) bool {
	key = strings.ToLower(key)
	if slices.Contains(statusWords, key) {
		return true
	}
	// A file name is no credential's key: "monkey.yaml: …", "/etc/keys.json:".
	if ext := filepath.Ext(key); slices.Contains(fileExtensions, ext) || sep > len(key) && line[sep-len(key)-1] == '/' {
		return true
	}
	// "Authorization: Bearer x": the header rule keeps the scheme word.
	if line[sep] == ':' && strings.HasSuffix(key, "authorization") {
		return true
	}
	// "AUTH_HEADER=Bearer x": the scheme rule redacts x, keeping "Bearer".
	word := line[sep+1:]
	word = strings.TrimLeft(word, " \t")
	if i := strings.IndexAny(word, " \t"); i > 0 {
		return slices.Contains(credentialSchemes, strings.ToLower(word[:i]))
	}
	return false
}

// valueAfter finds the value that starts after blanks at from: the inside
// of a quoted string (which must close on this line) or a bare word.
func valueAfter(line string, from int) (span, bool) {
	for from < len(line) && (line[from] == ' ' || line[from] == '\t') {
		from++
	}
	if from == len(line) {
		return span{}, false
	}
	switch quote := line[from]; quote {
	case '"', '\'':
		for i := from + 1; i < len(line); i++ {
			switch {
			case line[i] == quote:
				return span{from + 1, i}, i > from+1
			case line[i] == '\\' && quote == '"':
				i++ // \" does not close a JSON string
			case line[i] == '\r':
				return span{}, false
			}
		}
		return span{}, false
	}
	end := from
	for end < len(line) && !strings.ContainsRune(" \t\r\n\"',&;", rune(line[end])) {
		end++
	}
	return span{from, end}, end > from
}

// markPatterns marks what the rules find in s.
func markPatterns(s string, mark func(span)) {
	lower := asciiLower(s) // same byte offsets as s
	for _, r := range rules {
		if !containsAny(lower, r.triggers) {
			continue
		}
		if r.wholeText {
			r.find(s, mark)
			continue
		}
		for start := 0; start < len(s); {
			end := strings.IndexByte(s[start:], '\n')
			if end < 0 {
				end = len(s)
			} else {
				end += start
			}
			if containsAny(lower[start:end], r.triggers) {
				offset := start
				r.find(s[start:end], func(sp span) { mark(span{sp.start + offset, sp.end + offset}) })
			}
			start = end + 1
		}
	}
}

// asciiLower lower-cases ASCII letters only, so offsets stay valid.
func asciiLower(s string) string {
	lower := []byte(s)
	for i, c := range lower {
		if 'A' <= c && c <= 'Z' {
			lower[i] = c + 'a' - 'A'
		}
	}
	return string(lower)
}

func containsAny(s string, words []string) bool {
	for _, word := range words {
		if strings.Contains(s, word) {
			return true
		}
	}
	return false
}

func lowerWords(words []string) []string {
	lower := make([]string, len(words))
	for i, word := range words {
		lower[i] = strings.ToLower(word)
	}
	return lower
}

// String returns s with credentials replaced by Marker: every literal in
// secrets of at least MinSecretLen bytes, then everything the patterns
// recognise (see the rules above).
//
// Redaction marks byte ranges of the original text and replaces each
// maximal marked run once, instead of replacing secrets one after another:
// sequential replacement breaks on overlapping secrets ("abcdef" with
// secrets "abcd" and "cdef" would leave "ef"), and a replacement can form a
// secret with its neighbours. The result is checked again for the literal
// secrets until none is left (or, for a crafted input, the whole text is
// withheld), so no secret of MinSecretLen or more bytes ever appears in the
// output, whatever the input.
func String(s string, secrets ...string) string {
	if s == "" {
		return s
	}
	literals := usableSecrets(append(remembered(), secrets...))
	covered := make([]bool, len(s))
	found := false
	mark := func(sp span) {
		for i := sp.start; i < sp.end; i++ {
			covered[i] = true
		}
		found = found || sp.end > sp.start
	}
	for _, secret := range literals {
		for _, sp := range occurrences(s, secret) {
			mark(sp)
		}
	}
	markPatterns(s, mark)
	if !found {
		return s
	}

	marker := Marker
	for _, secret := range literals {
		if strings.Contains(Marker, secret) {
			marker = fallbackMarker
		}
	}
	// A secret can only reappear across a marker's edge, and only when it
	// is built from the marker's own characters, so one round is the rule.
	// Each further round marks more bytes; an input crafted to cascade
	// ("SECRET]]]]…" with the secret "ED]]") is withheld whole rather than
	// costing a round per byte.
	for range maxRounds {
		out, origin := render(s, covered, marker)
		if len(literals) == 0 || !coverLeaks(out, origin, literals, covered) {
			return out
		}
	}
	return marker
}

// maxRounds bounds String's re-checks for secrets formed across a marker.
const maxRounds = 4

// usableSecrets drops secrets too short to redact and duplicates, longest
// first (the order does not change the result; it keeps it predictable).
func usableSecrets(secrets []string) []string {
	var usable []string
	for _, secret := range secrets {
		if len(secret) >= MinSecretLen && !slices.Contains(usable, secret) {
			usable = append(usable, secret)
		}
	}
	slices.SortFunc(usable, func(a, b string) int { return len(b) - len(a) })
	return usable
}

// occurrences returns every occurrence of secret in s, overlapping ones
// included ("aaaa" occurs twice in "aaaaa").
func occurrences(s, secret string) []span {
	var found []span
	for from := 0; from+len(secret) <= len(s); {
		i := strings.Index(s[from:], secret)
		if i < 0 {
			break
		}
		found = append(found, span{from + i, from + i + len(secret)})
		from += i + 1
	}
	return found
}

// render writes s with every maximal covered run replaced by marker.
// origin[i] is the index in s of output byte i, or -1 inside a marker.
func render(s string, covered []bool, marker string) (string, []int) {
	var out strings.Builder
	out.Grow(len(s))
	origin := make([]int, 0, len(s))
	for i := 0; i < len(s); {
		start := i
		if covered[i] {
			for i < len(s) && covered[i] {
				i++
			}
			out.WriteString(marker)
			for range len(marker) {
				origin = append(origin, -1)
			}
			continue
		}
		for i < len(s) && !covered[i] {
			origin = append(origin, i)
			i++
		}
		out.WriteString(s[start:i])
	}
	return out.String(), origin
}

// coverLeaks marks the original bytes of any secret that shows up in out
// (one formed across a marker's edge) and reports whether it marked any.
func coverLeaks(out string, origin []int, secrets []string, covered []bool) bool {
	grew := false
	for _, secret := range secrets {
		for _, sp := range occurrences(out, secret) {
			for _, o := range origin[sp.start:sp.end] {
				if o >= 0 && !covered[o] {
					covered[o] = true
					grew = true
				}
			}
		}
	}
	return grew
}

// Tail returns the last bytes of s, at most max of them in all, starting on
// a rune boundary; when s was cut the result starts with "…" (counted in
// max, so the result always fits the caller's bound).
func Tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max <= 0 {
		return ""
	}
	const ellipsis = "…"
	prefix, keep := ellipsis, max-len(ellipsis)
	if keep <= 0 {
		prefix, keep = "", max
	}
	start := len(s) - keep
	// Step over at most the continuation bytes of one rune; invalid UTF-8
	// (a run of stray continuation bytes) must not eat the whole tail.
	for i := 0; i < utf8.UTFMax-1 && start < len(s) && !utf8.RuneStart(s[start]); i++ {
		start++
	}
	return prefix + s[start:]
}
