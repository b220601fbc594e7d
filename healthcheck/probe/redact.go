package probe

import "github.com/nightwatch-dev/nightwatch/internal/redact"

// scrub removes secrets from text a server printed or answered before it
// goes into a Reason: the given literal values (mcpconfig.Server.Secrets)
// and whatever the shared redactor's patterns recognise (bearer tokens,
// KEY=value pairs, …).
func scrub(s string, secrets ...string) string { return redact.String(s, secrets...) }
