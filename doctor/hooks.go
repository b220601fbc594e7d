package doctor

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

const hooksTitle = "hook registration"

// hookEvents are the events nightwatch needs: PreToolUse blocks dead
// servers, PostToolUse and PostToolUseFailure learn from real calls.
var hookEvents = []string{"PreToolUse", "PostToolUse", "PostToolUseFailure"}

// nightwatchHook recognises "…/nightwatch hook" or the dedicated
// "…/nightwatch-hook" executable in a command line.
var nightwatchHook = regexp.MustCompile(`(^|[/\s"'])nightwatch(["']?\s+hook\b|-hook(\.exe)?(["'\s]|$))`)

const nodeHook = "mcp-health-check.js"

const hookFix = `add to the "hooks" object of %s, for each of PreToolUse, PostToolUse and PostToolUseFailure:
  [{"matcher": "mcp__.*", "hooks": [{"type": "command", "command": "/absolute/path/to/nightwatch-hook", "timeout": 180}]}]`

// hooks checks that sessions will run nightwatch's hook, once, for every
// MCP tool.
func (e *env) hooks(context.Context) []Check {
	var out []Check
	add := func(l Level, detail, fix string) {
		out = append(out, Check{ID: "hooks", Title: hooksTitle, Level: l, Detail: detail, Fix: fix})
	}
	// Without a batch the user's settings are the only protection; with
	// one, the supervisor injects the hook into its own sessions.
	missingLevel, note := Fail, ""
	if e.batch != nil {
		missingLevel, note = Warn, " (the batch's sessions get it from the supervisor; interactive sessions do not)"
	}
	userFile := e.settingsFiles()[0].path
	samples := e.sampleTools()

	type coverage struct {
		matchers []string
		covered  map[string]bool
	}
	user, project := map[string]*coverage{}, map[string]*coverage{}
	var projectFiles, nodeFiles []string
	for _, sf := range e.settingsFiles() {
		s, err := readSettings(sf.path)
		if err != nil {
			add(Fail, err.Error(), "repair the JSON of "+sf.path+" (Claude Code ignores a file it cannot parse)")
			continue
		}
		if s == nil {
			continue
		}
		for _, h := range s.commands() {
			if strings.Contains(h.command, nodeHook) && !slices.Contains(nodeFiles, sf.path) {
				nodeFiles = append(nodeFiles, sf.path)
			}
			if !nightwatchHook.MatchString(h.command) || !slices.Contains(hookEvents, h.event) {
				continue
			}
			byEvent := user
			if !sf.user {
				byEvent = project
				if !slices.Contains(projectFiles, sf.path) {
					projectFiles = append(projectFiles, sf.path)
				}
			}
			c := byEvent[h.event]
			if c == nil {
				c = &coverage{covered: map[string]bool{}}
				byEvent[h.event] = c
			}
			c.matchers = append(c.matchers, h.matcher)
			for _, tool := range samples {
				if matcherMatches(h.matcher, tool) {
					c.covered[tool] = true
				}
			}
		}
	}

	var missing, projectOnly []string
	// Events whose matchers miss a tool, grouped by those matchers so one
	// mistake copied to three events is one line.
	type miss struct {
		matchers, tool string
		events         []string
	}
	var misses []*miss
	for _, event := range hookEvents {
		switch {
		case user[event] != nil:
			c := user[event]
			missed := uncovered(samples, c.covered)
			if len(missed) == 0 {
				continue
			}
			key := quoteAll(c.matchers)
			i := slices.IndexFunc(misses, func(m *miss) bool { return m.matchers == key })
			if i < 0 {
				misses = append(misses, &miss{matchers: key, tool: missed[0]})
				i = len(misses) - 1
			}
			misses[i].events = append(misses[i].events, event)
		case project[event] != nil:
			projectOnly = append(projectOnly, event)
		default:
			missing = append(missing, event)
		}
	}
	for _, m := range misses {
		events := strings.Join(m.events, ", ")
		add(missingLevel, fmt.Sprintf("matcher %s for %s in %s misses MCP tools such as %s%s", m.matchers, events, userFile, m.tool, note),
			fmt.Sprintf(`set "matcher": "mcp__.*" for %s in %s (empty or "*" = every tool; only letters, digits, _ and | = exact names; anything else = a regexp)`, events, userFile))
	}
	if len(missing) > 0 {
		add(missingLevel, fmt.Sprintf("nightwatch is not registered for %s in %s%s", strings.Join(missing, ", "), userFile, note), fmt.Sprintf(hookFix, userFile))
	}
	if len(projectOnly) > 0 {
		add(Warn, fmt.Sprintf("nightwatch is registered for %s only in %s: sessions elsewhere are unprotected", strings.Join(projectOnly, ", "), strings.Join(projectFiles, ", ")),
			fmt.Sprintf("move the registration to %s (the article's rule 11: one home config for every project)", userFile))
	}
	if len(nodeFiles) > 0 {
		registered := len(user)+len(project) > 0
		if registered {
			add(Fail, fmt.Sprintf("the article's Node hook (%s) is registered next to nightwatch in %s: double probing, two caches that disagree", nodeHook, strings.Join(nodeFiles, ", ")),
				fmt.Sprintf("delete the hook entries whose command runs %s from %s", nodeHook, strings.Join(nodeFiles, ", ")))
		} else {
			add(Warn, fmt.Sprintf("the article's Node hook (%s) is registered in %s", nodeHook, strings.Join(nodeFiles, ", ")),
				"replace its command with /absolute/path/to/nightwatch hook: the variables and the cache file are the same")
		}
	}
	if len(out) == 0 {
		out = append(out, ok("hooks", hooksTitle, "nightwatch is registered in "+userFile+" for every MCP tool ("+strings.Join(hookEvents, ", ")+")"))
	}
	return out
}

// sampleTools are tool names a matcher must let through: one of every
// known server (batch and config), and a generic one.
func (e *env) sampleTools() []string {
	var names []string
	if e.batch != nil {
		for _, s := range e.batch.Servers {
			names = append(names, s.Name)
		}
	}
	r := mcpconfig.Resolve(e.knobs.ConfigOptions(e.Cwd, e.Home, e.Getenv))
	names = append(names, r.Names...)
	names = append(names, "x") // last: a message names a real server first
	var tools []string
	for _, n := range names {
		tool := "mcp__" + mcpconfig.NormalizeName(n) + "__y"
		if !slices.Contains(tools, tool) {
			tools = append(tools, tool)
		}
	}
	return tools
}

var exactNames = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)

// matcherMatches applies Claude Code's matcher rule: empty or "*" matches
// every tool; letters, digits, _ and | are a list of exact names; anything
// else is an unanchored regular expression.
func matcherMatches(matcher, tool string) bool {
	switch {
	case matcher == "" || matcher == "*":
		return true
	case exactNames.MatchString(matcher):
		return slices.Contains(strings.Split(matcher, "|"), tool)
	}
	re, err := regexp.Compile(matcher)
	return err == nil && re.MatchString(tool)
}

func uncovered(samples []string, covered map[string]bool) []string {
	var out []string
	for _, s := range samples {
		if !covered[s] {
			out = append(out, s)
		}
	}
	return out
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}
