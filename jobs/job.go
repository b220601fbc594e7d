package jobs

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/nightwatch-dev/nightwatch/internal/text"
	"gopkg.in/yaml.v3"
)

var jobFields = []string{
	"name", "prompt", "prompt_file", "servers", "cwd", "needs",
	"timeout", "stall_timeout", "retries", "on_unhealthy", "mcp_timeout", "allowed_tools", "verify", "hosts",
	"side_effects", "max_cost_usd", "max_turns", "session_env",
}

// jobRefs keeps the lines of a job's references for the checks that need
// every job and server first.
type jobRefs struct {
	field       string
	serverLines []int
	needsLines  []int
}

// jobs reads the list of jobs, then checks what spans them: unique names,
// known servers, known needs, no cycle.
func (l *loader) jobs(b *Batch, f map[string]pair, rootLine int) {
	p, ok := f["jobs"]
	var nodes []*yaml.Node
	if ok {
		nodes, _ = l.seq(p.val, "jobs")
	}
	if len(nodes) == 0 {
		line := rootLine
		if ok {
			line = p.line()
		}
		l.problem(line, "jobs", "the batch has no jobs")
		return
	}
	refs := make([]jobRefs, 0, len(nodes))
	for i, n := range nodes {
		j, r := l.job(b, i, n)
		b.Jobs = append(b.Jobs, j)
		refs = append(refs, r)
	}
	l.checkRefs(b, refs)
}

func (l *loader) job(b *Batch, i int, n *yaml.Node) (*Job, jobRefs) {
	field := fmt.Sprintf("jobs[%d]", i)
	refs := jobRefs{field: field}
	j := &Job{Cwd: b.Dir}
	if rn := l.node(n); rn != nil {
		j.Line = rn.Line
	}
	f := l.fields(n, field, jobFields...)

	if p, ok := f["name"]; ok {
		if s, line, ok := l.text(p.val, field+".name"); ok && l.checkName(s, line, field+".name", "job") {
			j.Name = s
		}
	} else {
		l.problem(j.Line, field+".name", "is required")
	}

	l.prompt(j, f, field)

	if p, ok := f["servers"]; ok {
		for _, it := range l.strList(p.val, field+".servers", false) {
			j.Servers = append(j.Servers, it.value)
			refs.serverLines = append(refs.serverLines, it.line)
		}
	}
	if p, ok := f["needs"]; ok {
		for _, it := range l.strList(p.val, field+".needs", false) {
			j.Needs = append(j.Needs, it.value)
			refs.needsLines = append(refs.needsLines, it.line)
		}
	}
	if p, ok := f["cwd"]; ok {
		if s, line, ok := l.str(p.val, field+".cwd"); ok {
			if dir, ok := l.path(s, line, field+".cwd"); ok {
				j.Cwd = dir
				if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
					l.problem(line, field+".cwd", "%s is not an existing folder", dir)
				}
			}
		}
	}

	if p, ok := f["hosts"]; ok {
		for k, it := range l.strList(p.val, field+".hosts", false) {
			if l.checkName(it.value, it.line, fmt.Sprintf("%s.hosts[%d]", field, k), "host label") {
				j.Hosts = append(j.Hosts, it.value)
			}
		}
		if b.Cluster == nil {
			l.problem(p.line(), field+".hosts", "pins the job to hosts, but the batch has no cluster: section (one host runs every job)")
		}
	}

	s := b.Defaults
	l.jobSettings(f, field, &s)
	j.Timeout, j.StallTimeout, j.Retries, j.OnUnhealthy, j.MCPTimeout = s.Timeout, s.StallTimeout, s.Retries, s.OnUnhealthy, s.MCPTimeout
	j.Verify = s.Verify
	j.SideEffects = s.SideEffects
	j.MaxCostUSD, j.MaxTurns = s.MaxCostUSD, s.MaxTurns
	j.SessionEnv = b.SessionEnv
	if p, ok := f["session_env"]; ok {
		j.SessionEnv = l.sessionEnvList(p, field+".session_env")
	}
	l.checkStall(b, j, f, field)

	if p, ok := f["allowed_tools"]; ok {
		tools := l.strList(p.val, field+".allowed_tools", true)
		for i, it := range tools {
			// They follow --allowedTools on claude's command line: an entry
			// starting with '-' would be read as a flag of its own
			// ("--dangerously-skip-permissions"), never as a tool rule.
			if strings.HasPrefix(it.value, "-") || strings.TrimSpace(it.value) == "" {
				l.problem(it.line, fmt.Sprintf("%s.allowed_tools[%d]", field, i),
					"%q is not a tool rule (it would be read as a flag of claude's command line)", it.value)
			} else if err := checkAllowed(it.value, j.Servers); err != nil {
				l.problem(it.line, fmt.Sprintf("%s.allowed_tools[%d]", field, i), "%v", err)
			}
		}
		j.AllowedTools, j.AllowedToolsSet = values(tools), true
	}
	return j, refs
}

// prompt reads exactly one of prompt and prompt_file. The prompt is not
// expanded: it is prose, and "${" in it is the user's text.
func (l *loader) prompt(j *Job, f map[string]pair, field string) {
	inline, hasInline := f["prompt"]
	file, hasFile := f["prompt_file"]
	switch {
	case hasInline && hasFile:
		l.problem(file.line(), field, "has both prompt (line %d) and prompt_file: keep one", inline.line())
		return
	case !hasInline && !hasFile:
		l.problem(j.Line, field, "needs a prompt or a prompt_file")
		return
	}
	if hasInline {
		s, line, ok := l.text(inline.val, field+".prompt")
		if !ok {
			if isNull(l.node(inline.val)) {
				l.problem(inline.line(), field+".prompt", "is empty")
			}
			return
		}
		j.Prompt = s
		l.checkPrompt(s, line, field+".prompt")
		return
	}
	s, line, ok := l.str(file.val, field+".prompt_file")
	if !ok {
		if isNull(l.node(file.val)) {
			l.problem(file.line(), field+".prompt_file", "is empty")
		}
		return
	}
	path, ok := l.path(s, line, field+".prompt_file")
	if !ok {
		return
	}
	j.PromptFile = path
	r, ok := l.prompts[path]
	if !ok {
		// Read each file once: several jobs may share a prompt.
		data, err := readLimited(path, maxPromptBytes)
		r = promptRead{text: string(data), err: err}
		if l.prompts == nil {
			l.prompts = map[string]promptRead{}
		}
		l.prompts[path] = r
	}
	if r.err != nil {
		l.problem(line, field+".prompt_file", "%s: %v", path, r.err)
		return
	}
	j.Prompt = r.text
	l.checkPrompt(j.Prompt, line, field+".prompt_file")
}

// promptRead is a prompt_file as read.
type promptRead struct {
	text string
	err  error
}

// checkPrompt refuses prompts exec would refuse, and empty ones.
func (l *loader) checkPrompt(s string, line int, field string) {
	switch {
	case strings.TrimSpace(s) == "":
		l.problem(line, field, "the prompt is empty")
	case len(s) > maxPromptBytes:
		l.problem(line, field, "the prompt is %d bytes; one command-line argument holds at most %d on Linux", len(s), maxPromptBytes)
	case strings.IndexByte(s, 0) >= 0:
		l.problem(line, field, "the prompt contains a NUL byte")
	case !utf8.ValidString(s):
		l.problem(line, field, "the prompt is not UTF-8 text")
	}
}

// checkRefs checks what needs every job: names are unique, servers and
// needs exist, needs have no cycle. Maps, not scans: lists can be long
// (YAML aliases) and this must stay linear.
func (l *loader) checkRefs(b *Batch, refs []jobRefs) {
	index := map[string]int{}
	for i, j := range b.Jobs {
		if j.Name == "" {
			continue
		}
		if first, dup := index[j.Name]; dup {
			l.problem(j.Line, refs[i].field+".name", "job %q is defined twice (first at line %d)", j.Name, b.Jobs[first].Line)
			continue
		}
		index[j.Name] = i
	}
	servers := map[string]bool{}
	var names []string
	for _, s := range b.Servers {
		servers[s.Name] = true
		names = append(names, s.Name)
	}
	defined := listOf(names)

	for i, j := range b.Jobs {
		r := refs[i]
		seen := map[string]bool{}
		for k, s := range j.Servers {
			switch {
			case !servers[s]:
				l.problem(r.serverLines[k], r.field+".servers", "unknown server %q%s (defined: %s)", s, text.DidYouMean(s, names), defined)
			case seen[s]:
				l.problem(r.serverLines[k], r.field+".servers", "server %q is listed twice", s)
			}
			seen[s] = true
		}
		clear(seen)
		for k, n := range j.Needs {
			_, known := index[n]
			switch {
			case !known:
				l.problem(r.needsLines[k], r.field+".needs", "unknown job %q%s", n, text.DidYouMean(n, slices.Collect(maps.Keys(index))))
			case seen[n]:
				l.problem(r.needsLines[k], r.field+".needs", "job %q is listed twice", n)
			}
			seen[n] = true
		}
	}
	l.checkCycles(b, refs, index)
}

// listOf names up to 20 things for a message.
func listOf(names []string) string {
	switch {
	case len(names) == 0:
		return "none"
	case len(names) > 20:
		return strings.Join(names[:20], ", ") + fmt.Sprintf(", … (%d in all)", len(names))
	}
	return strings.Join(names, ", ")
}

// checkCycles reports each cycle of needs once, as the path that closes
// it ("a → b → a"), at the line of the need that closes it.
func (l *loader) checkCycles(b *Batch, refs []jobRefs, index map[string]int) {
	const notOnPath = -1
	done := make([]bool, len(b.Jobs))
	pos := make([]int, len(b.Jobs)) // position in path, or notOnPath
	for i := range pos {
		pos[i] = notOnPath
	}
	var path []int
	var visit func(i int)
	visit = func(i int) {
		pos[i] = len(path)
		path = append(path, i)
		seen := map[string]bool{} // a need listed twice is one edge
		for k, n := range b.Jobs[i].Needs {
			if seen[n] {
				continue
			}
			seen[n] = true
			t, known := index[n]
			switch {
			case !known || done[t]:
			case pos[t] == notOnPath:
				visit(t)
			case !l.full():
				l.problem(refs[i].needsLines[k], refs[i].field+".needs", "needs cycle: %s", cyclePath(b, path[pos[t]:], n))
			}
		}
		path = path[:len(path)-1]
		pos[i] = notOnPath
		done[i] = true
	}
	for i, j := range b.Jobs {
		// A duplicate, or a job that lost its name to a problem, is not in
		// index: its needs are checked under the first job of that name.
		if !done[i] && j.Name != "" && index[j.Name] == i {
			visit(i)
		}
	}
}

// cyclePath is "a → b → a"; a long cycle shows its ends.
func cyclePath(b *Batch, path []int, back string) string {
	names := make([]string, 0, 12)
	for k, p := range path {
		if len(path) > 10 && k == 5 {
			names = append(names, fmt.Sprintf("… (%d more)", len(path)-10))
		}
		if len(path) <= 10 || k < 5 || k >= len(path)-5 {
			names = append(names, b.Jobs[p].Name)
		}
	}
	return strings.Join(append(names, back), " → ")
}
