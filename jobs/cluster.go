package jobs

import (
	"regexp"
	"strings"
	"time"
)

// envName is a variable's name as POSIX shells take it.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// cluster reads `cluster: {database_env: VAR, rescue_after: 2h}`. The
// connection string is never written in the file: a field that looks like
// one is refused with where it belongs instead.
func (l *loader) cluster(b *Batch, f map[string]pair) {
	p, ok := f["cluster"]
	if !ok {
		return
	}
	c := &Cluster{DatabaseEnv: DefaultDatabaseEnv, Line: p.line()}
	b.Cluster = c
	if p.val != nil && p.val.Tag == "!!null" {
		return // `cluster:` alone: every default
	}
	cf := l.fields(p.val, "cluster", "database_env", "rescue_after")
	if q, ok := cf["database_env"]; ok {
		if s, line, ok := l.str(q.val, "cluster.database_env"); ok {
			switch {
			case strings.Contains(s, "://") || strings.Contains(s, "="):
				l.problem(line, "cluster.database_env", "names the variable that holds the connection string (e.g. %s), not the string itself: "+
					"a password must not be written in the batch file; set it in the environment or in env_file", DefaultDatabaseEnv)
			case !envName.MatchString(s):
				l.problem(line, "cluster.database_env", "%q is not a variable name", s)
			default:
				c.DatabaseEnv = s
			}
		}
	}
	if q, ok := cf["rescue_after"]; ok {
		if v, ok := l.duration(q.val, "cluster.rescue_after"); ok {
			c.RescueAfter = v
		}
	}
}

// rescueMargin is the rescue_after default's margin over the longest job
// timeout.
const rescueMargin = 5 * time.Minute

// checkRescue gives rescue_after its default and refuses one that a live
// attempt could outlast: River would rescue it while its worker still runs
// it, and the job would run twice.
func (l *loader) checkRescue(b *Batch) {
	c := b.Cluster
	if c == nil {
		return
	}
	var longest time.Duration
	var name string
	for _, j := range b.Jobs {
		if j != nil && j.Timeout > longest {
			longest, name = j.Timeout, j.Name
		}
	}
	if c.RescueAfter == 0 {
		c.RescueAfter = longest + rescueMargin
		return
	}
	if c.RescueAfter <= longest {
		l.problem(c.Line, "cluster.rescue_after", "%s is not longer than job %s's timeout (%s): River would rescue its attempt while a worker still runs it",
			c.RescueAfter, name, longest)
	}
}
