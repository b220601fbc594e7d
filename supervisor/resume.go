package supervisor

import (
	"context"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
)

// A retry that resumes a Claude session (--resume) must find its servers:
// a resumed session whose server cannot start is deaf for good, whatever
// hooks do (reference in-flight §3.1). What the previous attempt left is
// gone by then: its session's process group, and on Linux whatever left
// the group carrying its spawn mark, are killed when its leader exits
// (proc.Wait), and a night resumed after a crash kills the sessions its
// journal names (killLeftovers). What is left to do before a resume is to
// probe the job's servers afresh; a resumed attempt whose init still says
// failed is stopped and the next one runs fresh (the plan's Fresh).

// probeBeforeResume probes job's servers now, whatever the cache says,
// when its next attempt resumes a session: a verdict from before the last
// attempt (a server that held a lock then, a backend that went down since)
// must not send a resume into a session without them.
func (n *night) probeBeforeResume(ctx context.Context, job string) {
	resumes, attempts := n.plan.Resumes(job)
	if !resumes || n.probedForResume[job] == attempts {
		return
	}
	// Once per attempt to come: a job that then waits for its servers is
	// looked at again at every turn of the loop, by the cache's rules.
	if n.probedForResume == nil {
		n.probedForResume = map[string]int{}
	}
	n.probedForResume[job] = attempts
	for _, srv := range n.b.ServersOf(n.b.Job(job)) {
		def := srv.MCP // a copy: the batch is shared
		if def.Name == "" {
			def.Name = srv.Name
		}
		res := n.probe(ctx, &def)
		n.checker.RecordProbe(&def, res, healthcheck.ByProbe)
		n.log.Info().Str("job", job).Str("server", srv.Name).Str("verdict", string(res.Verdict)).
			Msg("probed before resuming the job's session")
	}
	n.absorbServerEvents()
}
