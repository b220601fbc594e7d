package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/clirange"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

const agentTitle = "Claude Code"

// versionRe recognises `claude --version` output: "2.1.332 (Claude Code)".
var versionRe = regexp.MustCompile(`\d+\.\d+\.\d+\s*\(Claude Code\)`)

// updateFix is how a user moves to a tested Claude Code.
const updateFix = "claude update   # or: npm install -g @anthropic-ai/claude-code@" + clirange.Newest

// agent checks that Claude Code can be found and reports its version
// against the range nightwatch's end-to-end suite runs (clirange): hook
// payloads, deny framing and error texts differ between versions, and
// nightwatch only knows the ones it is tested on.
func (e *env) agent(ctx context.Context) []Check {
	bin := e.agentBin()
	path, err := lookPath(bin, e.Getenv)
	if err != nil {
		e.agentBroken = true
		return []Check{{ID: "agent", Title: agentTitle, Level: Fail, Detail: fmt.Sprintf("%s not found: %v", bin, err),
			Fix: "install Claude Code (npm install -g @anthropic-ai/claude-code) or set the batch's agent.command to its absolute path"}}
	}
	out, err := runVersion(ctx, path, e.AgentTimeout)
	if err != nil {
		e.agentBroken = true
		return []Check{{ID: "agent", Title: agentTitle, Level: Fail, Detail: fmt.Sprintf("%s --version: %v", path, err),
			Fix: "run " + path + " --version by hand and repair the installation"}}
	}
	version := clirange.Parse(versionRe.FindString(out))
	if version == "" {
		return []Check{{ID: "agent", Title: agentTitle, Level: Warn, Detail: fmt.Sprintf("%s --version printed %q, not \"X.Y.Z (Claude Code)\"", path, oneLine(strings.TrimSpace(out))),
			Fix: "check that " + path + " is Claude Code"}}
	}
	tested := clirange.Oldest + " to " + clirange.Newest
	switch clirange.Where(version) {
	case "older":
		return []Check{{ID: "agent", Title: agentTitle, Level: Fail,
			Detail: fmt.Sprintf("%s is Claude Code %s, older than every version nightwatch is tested with (%s): its hook payloads and error texts are unknown, so failures may go unseen and calls to dead servers unblocked",
				path, version, tested),
			Fix: updateFix}}
	case "newer":
		return []Check{{ID: "agent", Title: agentTitle, Level: Warn,
			Detail: fmt.Sprintf("%s is Claude Code %s, newer than tested (%s): a changed error text or hook payload may go unrecognised",
				path, version, tested),
			Fix: "update nightwatch (a release tested with " + version + " may exist), or pin Claude Code to " + clirange.Newest +
				": npm install -g @anthropic-ai/claude-code@" + clirange.Newest + " and turn off its auto-update (DISABLE_AUTOUPDATER=1)"}}
	}
	return []Check{ok("agent", agentTitle, fmt.Sprintf("%s is Claude Code %s, inside the tested range (%s)", path, version, tested))}
}

// lookPath finds bin on the PATH of the given environment (not the
// doctor's own process, which a test or a wrapper may have changed).
func lookPath(bin string, getenv func(string) (string, bool)) (string, error) {
	if bytes.ContainsRune([]byte(bin), '/') {
		return exec.LookPath(bin)
	}
	pathList, _ := getenv("PATH")
	for _, dir := range filepath.SplitList(pathList) {
		if p, err := exec.LookPath(joinPath(dir, bin)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("not on PATH (%s)", pathList)
}

// runVersion runs `bin --version` for at most timeout in its own process
// group, killed whole on timeout: a wrapper script must not outlive us.
func runVersion(ctx context.Context, bin string, timeout time.Duration) (string, error) {
	res, err := proc.Run(ctx, proc.Spec{Argv: []string{bin, "--version"}, Timeout: timeout})
	if err != nil {
		var re *proc.RunError
		if errors.As(err, &re) {
			return "", fmt.Errorf("%s: %s", re.How, oneLine(string(res.Stdout)+" "+string(res.Stderr)))
		}
		return "", err
	}
	return string(res.Stdout), nil
}

func joinPath(dir, bin string) string {
	if dir == "" {
		dir = "."
	}
	return filepath.Join(dir, bin)
}

// agentBin is the agent to check: Options.ClaudeBin, else the batch's
// agent.command, else claude on the night's PATH.
func (e *env) agentBin() string {
	switch {
	case e.ClaudeBin != "":
		return e.ClaudeBin
	case e.batch != nil && e.batch.Agent.Command != "":
		return e.batch.Agent.Command
	}
	return "claude"
}
