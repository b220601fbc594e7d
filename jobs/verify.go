package jobs

import (
	"runtime"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/command"
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
	if command.IsPath(v.Command[0], runtime.GOOS) {
		// Not an error: a job may create its own check. But a typo would
		// only show at night, after the work, as a failed attempt.
		if err := checkExecutable(exe); err != nil {
			l.warn(cmd[0].line, cmdField+"[0]", "%v (a relative program path is taken from the batch file's folder; the command runs in the job's cwd): the check would fail every attempt unless the job creates it", err)
		}
	}
	v.Command[0] = exe
	return v
}
