package doctor

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/reconnect"
)

const reconnectTitle = "reconnect commands"

// reconnect checks each batch server's reconnect command. Without one, a
// server that keeps failing pins its backoff at the cap (the article's
// stuck-backoff trap); with shell syntax, nightwatch (which runs no shell)
// would pass "&&" to the program as an argument.
func (e *env) reconnect(context.Context) []Check {
	if e.batch == nil {
		return []Check{ok("reconnect", reconnectTitle, "no batch given: reconnect commands are checked per batch")}
	}
	var out []Check
	add := func(l Level, detail, fix string) {
		out = append(out, Check{ID: "reconnect", Title: reconnectTitle, Level: l, Detail: detail, Fix: fix})
	}
	for _, s := range e.batch.Servers {
		cmd, source := s.Reconnect, e.batch.File
		if cmd == "" {
			cmd, source = reconnect.CommandFor(s.Name, e.Getenv)
		}
		if strings.TrimSpace(cmd) == "" {
			add(Warn, fmt.Sprintf("server %q has no reconnect command: after repeated failures its backoff pins at %s and a recovery is seen only that often",
				s.Name, e.batch.Health.MaxBackoff),
				fmt.Sprintf("give it one in %s: servers.%s.reconnect: \"pm2 restart %s\" (or NIGHTWATCH_RECONNECT_%s)", e.batch.File, s.Name, s.Name, reconnect.EnvKey(s.Name)))
			continue
		}
		if syntax := reconnect.ShellSyntax(cmd); len(syntax) > 0 {
			quoted := make([]string, len(syntax))
			for i, w := range syntax {
				quoted[i] = strconv.Quote(w)
			}
			add(Fail, fmt.Sprintf("server %q: reconnect %q (from %s) relies on shell syntax (%s), and nightwatch runs no shell",
				s.Name, cmd, source, strings.Join(quoted, ", ")),
				fmt.Sprintf("write it as: sh -c %s", text.ShellQuote(cmd)))
			continue
		}
		if _, err := reconnect.Split(cmd); err != nil {
			add(Fail, fmt.Sprintf("server %q: reconnect %q (from %s) cannot be split into arguments: %v", s.Name, cmd, source, err),
				"balance the quotes of the command")
		}
	}
	if len(out) == 0 {
		out = append(out, ok("reconnect", reconnectTitle, fmt.Sprintf("each of %d server(s) has a plain reconnect command", len(e.batch.Servers))))
	}
	return out
}
