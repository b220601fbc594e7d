package doctor

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

const agentTitle = "Claude Code"

// minVersion is the first Claude Code version assumed to send
// PostToolUseFailure. It is an assumption, not a documented threshold:
// older versions only warn.
var minVersion = [3]int{2, 1, 0}

var versionRe = regexp.MustCompile(`(\d+)\.(\d+)\.(\d+)\s*\(Claude Code\)`)

// agent checks that Claude Code can be found and is recent enough.
func (e *env) agent(ctx context.Context) []Check {
	bin := e.ClaudeBin
	if bin == "" && e.batch != nil {
		bin = e.batch.Agent.Command
	}
	if bin == "" {
		bin = "claude"
	}
	path, err := lookPath(bin, e.Getenv)
	if err != nil {
		return []Check{{ID: "agent", Title: agentTitle, Level: Fail, Detail: fmt.Sprintf("%s not found: %v", bin, err),
			Fix: "install Claude Code (npm install -g @anthropic-ai/claude-code) or set the batch's agent.command to its absolute path"}}
	}
	out, err := runVersion(ctx, path)
	if err != nil {
		return []Check{{ID: "agent", Title: agentTitle, Level: Fail, Detail: fmt.Sprintf("%s --version: %v", path, err),
			Fix: "run " + path + " --version by hand and repair the installation"}}
	}
	m := versionRe.FindStringSubmatch(out)
	if m == nil {
		return []Check{{ID: "agent", Title: agentTitle, Level: Warn, Detail: fmt.Sprintf("%s --version printed %q, not \"X.Y.Z (Claude Code)\"", path, oneLine(out)),
			Fix: "check that " + path + " is Claude Code"}}
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	version := fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
	if less(v, minVersion) {
		return []Check{{ID: "agent", Title: agentTitle, Level: Warn,
			Detail: fmt.Sprintf("%s is Claude Code %s: versions before %d.%d.%d may not send PostToolUseFailure, so failures are only learned on the next PreToolUse (the threshold is an assumption)",
				path, version, minVersion[0], minVersion[1], minVersion[2]),
			Fix: "claude update   # or npm install -g @anthropic-ai/claude-code@latest"}}
	}
	return []Check{ok("agent", agentTitle, fmt.Sprintf("%s is Claude Code %s", path, version))}
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
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

// runVersion runs `bin --version` for at most 5 s in its own process
// group, killed whole on timeout: a wrapper script must not outlive us.
func runVersion(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	proc.Prepare(cmd, 500*time.Millisecond)
	if err := cmd.Start(); err != nil {
		return "", err
	}
	if err := proc.Wait(cmd); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("no answer within 5s")
		}
		return "", fmt.Errorf("%s: %s", proc.ExitDescription(err), oneLine(out.String()))
	}
	return out.String(), nil
}

func joinPath(dir, bin string) string {
	if dir == "" {
		dir = "."
	}
	return filepath.Join(dir, bin)
}
