package probe

import (
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

// scrub removes secrets from text a server printed or answered before it
// goes into a Reason: the given literal values and whatever the shared
// redactor's patterns recognise (bearer tokens, KEY=value pairs, …).
func scrub(s string, secrets ...string) string { return redact.String(s, secrets...) }

// secretsOf lists the values of a server's definition that must never show
// in a reason: every env and header value (the redactor ignores values too
// short to be credentials).
func secretsOf(env, headers map[string]string) []string {
	var out []string
	for _, v := range env {
		out = append(out, v)
	}
	for _, v := range headers {
		out = append(out, v)
		// "Bearer abc": the token alone may be echoed too.
		if _, tok, ok := strings.Cut(v, " "); ok {
			out = append(out, strings.TrimSpace(tok))
		}
	}
	return out
}
