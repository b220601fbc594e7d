package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/statedir"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/jobs"
	"github.com/nightwatch-dev/nightwatch/journal"
	"github.com/nightwatch-dev/nightwatch/modelapi"
)

// Step is one line of the report's "what to do now": a job that failed,
// was skipped, did not finish or is not known good, why, and the one
// command or change that addresses it. Every cause comes from the
// journal's own fields (a class, a verify, denied tools, the servers it
// could not use and their outages), never from parsing a reason; the
// reason itself is shown whole.
type Step struct {
	Job string `json:"job"`
	// Status is failed, skipped, unfinished, or unverified (done, but it
	// ran without a server it needed).
	Status string `json:"status"`
	Cause  string `json:"cause"`
	Fix    string `json:"fix"`
	// Command is the one command that checks or does the fix, ready to
	// paste; "" when the fix is an edit (the re-run command is Night.Rerun).
	Command string `json:"command,omitempty"`
	// Rerun: `nightwatch rerun` runs it again as a new night (once the
	// fix is made). False when running it again could repeat work left
	// running (an MCP task), or the night is not over yet.
	Rerun bool `json:"rerun"`
}

// StatusUnverified is a done job whose work is not known good: it ran
// without a server it needed (on_unhealthy: run).
const StatusUnverified = "unverified"

// Advise makes the "what to do now" precise with the batch the night ran:
// a skipped job's needs, the night's max_cost_usd, a server's reconnect.
// Without it the steps say what the journal alone can tell.
func (n *Night) Advise(b *jobs.Batch) {
	n.batch = b
	n.next()
}

// RerunJobs are the jobs `nightwatch rerun` selects: those of Next marked
// Rerun, in the night's order.
func (n *Night) RerunJobs() []string {
	var names []string
	for _, s := range n.Next {
		if s.Rerun {
			names = append(names, s.Job)
		}
	}
	return names
}

// next fills Next and Rerun from the jobs.
func (n *Night) next() {
	n.Next, n.Rerun = nil, ""
	for _, j := range n.Jobs {
		if s, ok := n.step(j); ok {
			n.Next = append(n.Next, s)
		}
	}
	if len(n.RerunJobs()) > 0 {
		n.Rerun = "nightwatch rerun " + shellWord(n.batchFile()) + " --run " + shellWord(n.RunID)
	}
}

// batchFile is the batch file the commands name.
func (n *Night) batchFile() string {
	switch {
	case n.batch != nil && n.batch.File != "":
		return n.batch.File
	case n.BatchFile != "":
		return n.BatchFile
	}
	return "night.yaml"
}

// step is what to do about job j; ok is false for a job that needs
// nothing.
func (n *Night) step(j Job) (Step, bool) {
	file := shellWord(n.batchFile())
	s := Step{Job: j.Name, Status: j.Status, Rerun: true}
	switch j.Status {
	case string(journal.Done):
		if len(j.RanWithout) == 0 {
			return Step{}, false
		}
		s.Status = StatusUnverified
		s.Cause = "it ran without " + strings.Join(j.RanWithout, ", ") + " (on_unhealthy: run): its work may lack what those servers give"
		s.Fix, s.Command = n.serverFix(j.RanWithout, file)
		return s, true
	case string(journal.Failed), string(journal.Skipped):
	default: // unfinished
		if !n.Finished {
			s.Cause = "the journal ends while it runs or waits: the night is still running, or its supervisor stopped"
			s.Fix = "nightwatch status " + file + " says whether it runs; when it does not, run resumes the night (no done job runs again)"
			s.Command = "nightwatch run " + file
			s.Rerun = false
			return s, true
		}
		s.Cause = "the night ended before it did"
		if n.Closed != "" {
			s.Cause = "the night was closed before it ended: " + n.Closed
		}
		s.Fix = "re-run it"
		return s, true
	}

	class := modelapi.Class(j.Class)
	down := n.serversOf(j)
	switch {
	case j.Budget != nil:
		s.Cause = "the job's own budget stopped it: " + j.Reason
		s.Fix = fmt.Sprintf("raise the job's %s (now %g) in %s, or give it a smaller task, then re-run it", j.Budget.Limit, j.Budget.Max, file)
	case class == modelapi.InvalidCredentials || (j.Status == string(journal.Skipped) && n.Stopped != ""):
		s.Cause = "the agent's login was refused: " + firstNonEmpty(n.Stopped, j.Reason)
		s.Fix = "log the agent in again (claude /login, or a valid ANTHROPIC_API_KEY in its environment), then check it"
		s.Command = "nightwatch doctor " + file
	case class == modelapi.UsageLimit || class == modelapi.RateLimit:
		s.Cause = "the model's " + string(class) + ": " + j.Reason
		s.Fix = "wait for the limit to reset (or raise the account's limit), then re-run it"
	case class == modelapi.Unavailable:
		s.Cause = "the model's API was unavailable: " + j.Reason
		s.Fix = "re-run it once the API answers; doctor checks it"
		s.Command = "nightwatch doctor " + file
	case class == modelapi.MaxTurns:
		s.Cause = "the session reached its turn limit: " + j.Reason
		s.Fix = "give the job more turns or a smaller task (split its prompt into jobs with needs:)"
	case class == modelapi.ContextTooLong:
		s.Cause = "the session's context grew too long: " + j.Reason
		s.Fix = "split the job's prompt into smaller jobs joined by needs:"
	case len(j.Denied) > 0:
		s.Cause = "a permission rule denied " + strings.Join(j.Denied, ", ")
		s.Fix = "allow them: add them to the job's allowed_tools:; a dry run shows what each session is allowed"
		s.Command = "nightwatch run --dry-run " + file
	case len(j.TasksLost) > 0:
		var tools []string
		for _, t := range j.TasksLost {
			tools = addNew(tools, t.Tool)
		}
		s.Cause = "a server answered " + strings.Join(tools, ", ") + " with an MCP task the session cannot follow: the work may still be running there"
		s.Fix = "check at the server whether the task finished before running the job again (a re-run would start another task); prefer a tool that answers at once"
		s.Rerun = false
	case j.Verify != nil && !j.Verify.OK:
		cmd := strings.Join(j.Verify.Command, " ")
		if j.Verify.Err != "" {
			s.Cause = "its verify (" + cmd + ") did not run: " + j.Verify.Err
			s.Fix = "fix the verify command (a relative path is taken from the batch file's folder); try it by hand in the job's folder"
			s.Command = strings.Join(shellWords(j.Verify.Command), " ")
		} else {
			s.Cause = fmt.Sprintf("its verify (%s) exited %d", cmd, j.Verify.ExitCode)
			if out := strings.TrimSpace(j.Verify.Output); out != "" {
				s.Cause += ": " + out
			}
			s.Fix = "look at its work and the verify's output; when the check itself is wrong, fix the verify script; try it by hand in the job's folder"
			s.Command = strings.Join(shellWords(j.Verify.Command), " ")
		}
	case len(down) > 0:
		s.Cause = n.serverCause(down, j.Reason)
		s.Fix, s.Command = n.serverFix(down, file)
	case j.Status == string(journal.Skipped):
		s.Cause, s.Fix = j.Reason, n.skipFix(j)
	default:
		s.Cause = j.Reason
		if len(j.tries) > 1 {
			s.Cause = fmt.Sprintf("%s (%d attempts)", j.Reason, len(j.tries))
		}
		s.Fix = "read what the session said"
		if j.FinalMessage != "" {
			s.Fix += " (" + j.FinalMessage + ")"
		}
		if j.Folder != "" {
			s.Fix += " and its stderr (" + inFolder(j.Folder, statedir.AttemptStderr) + ")"
		}
		s.Fix += ", fix what it names, then re-run it"
	}
	if s.Cause == "" {
		s.Cause = "the journal gives no reason"
	}
	return s, true
}

// serversOf are the servers that kept job j from its work: those its
// sessions could not use or lost, else, for a job that waited, the
// servers down while it did.
func (n *Night) serversOf(j Job) []string {
	out := addNew(nil, j.Unusable...)
	out = addNew(out, j.Lost...)
	if len(out) > 0 || len(j.Deferrals) == 0 {
		return out
	}
	for _, d := range j.Deferrals {
		for _, srv := range n.Servers {
			for _, o := range srv.Outages {
				if !d.At.Before(o.From) && (o.To.IsZero() || !d.At.After(o.To)) {
					out = addNew(out, srv.Name)
				}
			}
		}
	}
	if n.batch != nil {
		// Only the job's own servers: another may have been down too.
		if bj := n.batch.Job(j.Name); bj != nil {
			out = slices.DeleteFunc(out, func(s string) bool { return !slices.Contains(bj.Servers, s) })
		}
	}
	return out
}

// serverCause says which servers were down and why, each outage's reason
// and its last reconnect's own words in full.
func (n *Night) serverCause(servers []string, reason string) string {
	var parts []string
	for _, name := range servers {
		p := name + " was down"
		if srv := n.server(name); srv != nil {
			if k := len(srv.Outages); k > 0 && srv.Outages[k-1].Reason != "" {
				p += " (" + srv.Outages[k-1].Reason + ")"
			}
			if srv.Reconnect != "" {
				p += "; its reconnect said: " + srv.Reconnect
			}
		}
		parts = append(parts, p)
	}
	cause := strings.Join(parts, "; ")
	if reason != "" {
		cause += ". " + reason
	}
	return cause
}

// serverFix is how to bring servers back, and the probe that checks them.
func (n *Night) serverFix(servers []string, file string) (fix, command string) {
	var noReconnect []string
	for _, name := range servers {
		srv := n.server(name)
		configured := srv != nil && srv.Reconnect != ""
		if n.batch != nil {
			if bs := n.batch.Server(name); bs != nil {
				configured = bs.Reconnect != ""
			}
		}
		if !configured {
			noReconnect = append(noReconnect, name)
		}
	}
	fix = "bring " + strings.Join(servers, ", ") + " back (or fix its reconnect:), check with a probe, then re-run the job"
	if len(noReconnect) > 0 {
		fix += "; give " + strings.Join(noReconnect, ", ") + " a reconnect: so the night can restart it on its own"
	}
	return fix, "nightwatch probe " + file + " " + strings.Join(shellWords(servers), " ")
}

// skipFix is the fix for a job skipped for a reason of the night's: what
// it needs, the night's budget, its deadline.
func (n *Night) skipFix(j Job) string {
	if b := n.batch; b != nil {
		if bj := b.Job(j.Name); bj != nil {
			var bad []string
			for _, need := range bj.Needs {
				if nj := n.job(need); nj != nil && nj.Status != string(journal.Done) {
					bad = append(bad, need)
				}
			}
			if len(bad) > 0 {
				return "fix " + strings.Join(bad, ", ") + " first (see its line); the re-run runs it and this job after it"
			}
		}
		if b.MaxCostUSD > 0 && n.Totals.CostUSD >= b.MaxCostUSD {
			return fmt.Sprintf("raise the batch's max_cost_usd (now $%.2f; the night spent $%.2f), or re-run only this job", b.MaxCostUSD, n.Totals.CostUSD)
		}
		if b.Deadline != nil {
			return fmt.Sprintf("when the batch's deadline (%02d:%02d) came first: set it later or start the night earlier, then re-run it", b.Deadline.Hour, b.Deadline.Minute)
		}
	}
	return "fix what the cause names (a job it needs, the night's deadline or max_cost_usd, a server), then re-run it"
}

func (n *Night) server(name string) *Server {
	for i := range n.Servers {
		if n.Servers[i].Name == name {
			return &n.Servers[i]
		}
	}
	return nil
}

func (n *Night) job(name string) *Job {
	for i := range n.Jobs {
		if n.Jobs[i].Name == name {
			return &n.Jobs[i]
		}
	}
	return nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// shellWord quotes s for a POSIX shell when it needs it, so that a
// command of the report can be pasted.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return text.ShellQuote(s)
}

func shellWords(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = shellWord(s)
	}
	return out
}

// inFolder names file in folder as the host that ran the attempt wrote
// it: the journal's folder keeps that host's separators, which the
// machine reading the report may not share.
func inFolder(folder, file string) string {
	sep := "/"
	if strings.Contains(folder, `\`) && !strings.Contains(folder, "/") {
		sep = `\`
	}
	return strings.TrimRight(folder, sep) + sep + file
}
