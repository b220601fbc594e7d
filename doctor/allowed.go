package doctor

import (
	"context"
	"fmt"
	"strings"
)

// allowedTools says, per job of the batch, what its session will be
// allowed: the tools of its declared servers unless its allowed_tools say
// otherwise. A declared server none of whose tools is allowed is a
// warning: under -p every call to it is denied, and the job fails.
func (e *env) allowedTools(context.Context) []Check {
	if e.batch == nil {
		return nil
	}
	var out []Check
	for _, j := range e.batch.Jobs {
		allowed := strings.Join(j.Allowed(), ", ")
		if allowed == "" {
			allowed = "no tool rule"
		}
		c := Check{ID: "allowed-tools", Title: "allowed tools", Level: OK,
			Detail: fmt.Sprintf("job %s: the session is allowed %s (from %s)", j.Name, allowed, j.AllowedSource())}
		if miss := j.Unallowed(); len(miss) > 0 {
			c.Level = Warn
			c.Detail += fmt.Sprintf("; no rule allows a tool of %s, so every call to it is denied and the job fails", strings.Join(miss, ", "))
			c.Fix = fmt.Sprintf("add mcp__%s to the allowed_tools of job %s (line %d), or drop the field to allow its servers' tools",
				miss[0], j.Name, j.Line)
		}
		out = append(out, c)
	}
	return out
}
