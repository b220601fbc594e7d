package jobs

import (
	"fmt"
	"maps"
	"slices"

	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// sessionEnvList reads a session_env list (defaults' or a job's): variable
// names, not expanded. Whether each is a variable a server uses is checked
// once every server is read (checkSessionEnv).
func (l *loader) sessionEnvList(p pair, field string) []string {
	items := l.strList(p.val, field, false)
	names := make([]string, 0, len(items))
	for i, it := range items {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case !isVarName(it.value):
			l.problem(it.line, f, "%q is not a variable name (letters, digits and _, not starting with a digit)", it.value)
			continue
		case slices.Contains(names, it.value):
			l.problem(it.line, f, "%s is listed twice", it.value)
			continue
		}
		names = append(names, it.value)
		l.sessionEnv = append(l.sessionEnv, item{key: f, value: it.value, line: it.line})
	}
	return names
}

// checkSessionEnv refuses a session_env name that no server of the batch
// uses: it would keep nothing (every other variable stays in the session
// anyway), so it is a typo or a server that was renamed.
func (l *loader) checkSessionEnv(b *Batch) {
	if len(l.sessionEnv) == 0 {
		return
	}
	used := map[string]bool{}
	for _, s := range b.Servers {
		for _, v := range s.Vars {
			used[v] = true
		}
	}
	names := slices.Sorted(maps.Keys(used))
	for _, it := range l.sessionEnv {
		if !used[it.value] {
			l.problem(it.line, it.key, "%s is not a variable any server uses%s (servers use: %s); session_env only names a server's variable the session's own tools need too, every other variable is in the session already",
				it.value, text.DidYouMean(it.value, names), listOf(names))
		}
	}
}

// ServerVars are the variables any server of the batch uses (Server.Vars),
// each with the names of the servers that use it.
func (b *Batch) ServerVars() map[string][]string {
	out := map[string][]string{}
	for _, s := range b.Servers {
		for _, v := range s.Vars {
			out[v] = append(out[v], s.Name)
		}
	}
	return out
}
