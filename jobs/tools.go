package jobs

import (
	"fmt"
	"path"
	"strings"
)

// A session is allowed the tools of its job's servers and no others,
// unless the job lists its own allowed_tools. Claude Code accepts a
// permission rule per MCP server, "mcp__<server>", which allows every tool
// of that server; a rule "mcp__<server>__<tool>" allows one tool, and
// "mcp__<server>__*" (or a prefix with *) a set of them.

// mcpPrefix starts every MCP tool's name and rule.
const mcpPrefix = "mcp__"

// ServerRule is the permission rule that allows every tool of server.
func ServerRule(server string) string { return mcpPrefix + server }

// Allowed is what the job's session is allowed (its --allowedTools): the
// job's allowed_tools when it sets them (an empty list allows nothing),
// else one rule per server the job declares. (A Job built by hand with
// AllowedTools and without AllowedToolsSet gets its AllowedTools.)
func (j *Job) Allowed() []string {
	if j.AllowedToolsSet || len(j.AllowedTools) > 0 {
		return j.AllowedTools
	}
	out := make([]string, 0, len(j.Servers))
	for _, s := range j.Servers {
		out = append(out, ServerRule(s))
	}
	return out
}

// ToolServer is the server part of an MCP tool name (mcp__web__echo →
// web), or "" for a tool that is not an MCP tool. A server whose name
// holds "__" cannot be told apart; the name is cut at the first.
func ToolServer(tool string) string {
	rest, ok := strings.CutPrefix(tool, mcpPrefix)
	if !ok {
		return ""
	}
	server, _, _ := strings.Cut(rest, "__")
	return server
}

// ruleServers returns which of servers an allowed_tools rule can match a
// tool of, and whether the rule is an MCP rule at all (Bash, Read(…) and
// other built-in rules are Claude Code's business, not checked here).
func ruleServers(rule string, servers []string) (matched []string, isMCP bool) {
	rest, ok := strings.CutPrefix(rule, mcpPrefix)
	if !ok {
		// "mcp*" or "*" could match MCP tools too: count them as matching
		// every server.
		if g, err := path.Match(rule, mcpPrefix+"x__y"); err == nil && g && strings.ContainsAny(rule, "*?[") {
			return servers, true
		}
		return nil, false
	}
	serverPart, _, hasTool := strings.Cut(rest, "__")
	for _, s := range servers {
		switch {
		case serverPart == s:
			matched = append(matched, s)
		case strings.ContainsAny(serverPart, "*?["):
			if g, err := path.Match(serverPart, s); err == nil && g {
				matched = append(matched, s)
			} else if !hasTool && strings.HasSuffix(serverPart, "*") && strings.HasPrefix(s, strings.TrimSuffix(serverPart, "*")) {
				matched = append(matched, s)
			}
		}
	}
	return matched, true
}

// checkAllowed reports an MCP rule of allowed_tools that can match no tool
// of any server the job declares: a typo (mcp__file__* for files) would
// leave the session without its tools and every call denied.
func checkAllowed(rule string, servers []string) error {
	matched, isMCP := ruleServers(rule, servers)
	if !isMCP || len(matched) > 0 {
		return nil
	}
	declared := "the job declares no server"
	if len(servers) > 0 {
		declared = "the job's servers are " + strings.Join(servers, ", ")
	}
	return fmt.Errorf("%q matches no tool of the job's servers (%s)", rule, declared)
}

// Unallowed are the job's servers whose tools no rule the session gets
// can match: every call the model makes to them will be denied.
func (j *Job) Unallowed() []string {
	covered := map[string]bool{}
	for _, rule := range j.Allowed() {
		matched, _ := ruleServers(rule, j.Servers)
		for _, s := range matched {
			covered[s] = true
		}
	}
	var out []string
	for _, s := range j.Servers {
		if !covered[s] {
			out = append(out, s)
		}
	}
	return out
}

// AllowedSource says where Allowed comes from, for people: "its
// allowed_tools" or "its servers".
func (j *Job) AllowedSource() string {
	if j.AllowedToolsSet || len(j.AllowedTools) > 0 {
		return "its allowed_tools"
	}
	return "its servers"
}
