package jobs

import (
	"time"

	"gopkg.in/yaml.v3"
)

// DefaultVerifyTimeout bounds a verify command that sets no timeout.
const DefaultVerifyTimeout = 5 * time.Minute

// verify reads a verify: field, in one of two forms:
//
//	verify: [go, test, ./...]
//	verify: {command: [go, test, ./...], timeout: 10m}
//
// null (verify: ~) turns a default check off for one job.
func (l *loader) verify(p pair, field string) *Verify {
	n := l.node(p.val)
	if isNull(n) {
		return nil
	}
	v := &Verify{Timeout: DefaultVerifyTimeout, Line: p.line()}
	var cmd []item
	cmdField := field
	switch n.Kind {
	case yaml.SequenceNode:
		cmd = l.strList(p.val, field, true)
	case yaml.MappingNode:
		vf := l.fields(p.val, field, "command", "timeout")
		q, ok := vf["command"]
		if !ok {
			l.problem(p.line(), field+".command", "is required: the program and its arguments, e.g. [go, test, ./...]")
			return nil
		}
		cmdField = field + ".command"
		cmd = l.strList(q.val, cmdField, true)
		if t, ok := vf["timeout"]; ok {
			if d, ok := l.duration(t.val, field+".timeout"); ok {
				if d <= 0 {
					l.problem(t.line(), field+".timeout", "must be above zero")
				} else {
					v.Timeout = d
				}
			}
		}
	default:
		l.problem(p.line(), field, "must be a command list ([go, test, ./...]) or {command: […], timeout: …}, not %s", kindName(n))
		return nil
	}
	if len(cmd) == 0 {
		l.problem(p.line(), cmdField, "want the program and its arguments, e.g. [go, test, ./...]")
		return nil
	}
	v.Command = values(cmd)
	exe, ok := l.executable(v.Command[0], cmd[0].line, cmdField+"[0]", false)
	if !ok {
		return nil
	}
	v.Command[0] = exe
	return v
}
