package doctor

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

const configTitle = "MCP config path"

// configPath checks an explicit config path list. The article's trap: a ~
// written into a launchd plist is never expanded, the file "does not
// exist", and every server silently disappears.
func (e *env) configPath(context.Context) []Check {
	var out []Check
	add := func(l Level, detail, fix string) {
		out = append(out, Check{ID: "config-path", Title: configTitle, Level: l, Detail: detail, Fix: fix})
	}
	value, name := e.knobs.MCPConfig.V, e.knobs.MCPConfig.Source
	if value != "" {
		for _, element := range filepath.SplitList(value) {
			element = strings.TrimSpace(element)
			if !strings.Contains(element, "~") {
				continue
			}
			fix := fmt.Sprintf("set %s=%s", name, strings.Replace(value, element, untilde(element, e.Home), 1))
			if strings.HasPrefix(element, "~/") {
				// nightwatch expands a leading ~ itself; the Node hook
				// reading the same ECC_ variable from a plist does not.
				add(Warn, fmt.Sprintf("%s=%q starts with ~: nightwatch expands it, but launchd does not and the Node hook will not either", name, value), fix)
				continue
			}
			add(Fail, fmt.Sprintf("%s=%q: launchd does not expand ~; write /Users/you/… (the file looked for is literally %q)", name, value, element), fix)
		}
	}
	r := mcpconfig.Resolve(e.knobs.ConfigOptions(e.Cwd, e.Home, e.Getenv))
	for _, p := range r.Problems {
		if p.Explicit && strings.Contains(p.Path, "~") && len(out) > 0 {
			continue // the ~ finding above already names this path and its fix
		}
		detail := p.Message
		if p.Explicit {
			detail = fmt.Sprintf("%s lists %s: %s", name, p.Path, p.Message)
		}
		add(Fail, detail, fmt.Sprintf("create or repair %s (it must be JSON with an \"mcpServers\" object), or point %s at the right file", p.Path, orName(name)))
	}
	if len(out) > 0 {
		return out
	}
	if value == "" {
		return []Check{ok("config-path", configTitle, fmt.Sprintf("not set; %d server(s) found by Claude Code's search from %s", len(r.Names), e.Cwd))}
	}
	return []Check{ok("config-path", configTitle, fmt.Sprintf("%s: %d server(s) in %s", name, len(r.Names), value))}
}

func orName(name string) string {
	if name == "" || name == "default" {
		return "NIGHTWATCH_MCP_CONFIG"
	}
	return name
}

// untilde guesses the path meant: what follows the last "~/" under home
// ("/Users/~/.claude/settings.json" → "<home>/.claude/settings.json").
func untilde(p, home string) string {
	if i := strings.LastIndex(p, "~/"); i >= 0 {
		return filepath.Join(home, p[i+2:])
	}
	return strings.ReplaceAll(p, "~", home)
}

// shadowed reports servers defined in several config files: the article's
// "I fixed the home config but it isn't reflected".
func (e *env) shadowed(context.Context) []Check {
	r := mcpconfig.Resolve(e.knobs.ConfigOptions(e.Cwd, e.Home, e.Getenv))
	var out []Check
	for _, name := range r.Names {
		defs := r.Shadowed[name]
		if len(defs) == 0 {
			continue
		}
		win := r.Servers[name]
		var lost []string
		for _, d := range defs {
			lost = append(lost, fmt.Sprintf("%s (%s)", d.Source, d.Scope))
		}
		out = append(out, Check{ID: "shadowed", Title: "shadowed servers", Level: Warn,
			Detail: fmt.Sprintf("server %q: %s (%s) wins; shadowed: %s", name, win.Source, win.Scope, strings.Join(lost, ", ")),
			Fix:    fmt.Sprintf("keep one definition of %q: edit %s, or delete the entry from %s", name, win.Source, strings.Join(sources(defs), ", "))})
	}
	for _, name := range slices.Sorted(maps.Keys(r.Dropped)) {
		why := r.Dropped[name]
		out = append(out, Check{ID: "shadowed", Title: "shadowed servers", Level: Warn,
			Detail: fmt.Sprintf("server %q: Claude Code drops a definition: %s", name, why),
			Fix:    "give the entry a \"type\" (http or sse) with its \"url\", or a \"command\""})
	}
	if len(out) == 0 {
		return []Check{ok("shadowed", "shadowed servers", fmt.Sprintf("each of %d server(s) is defined once", len(r.Names)))}
	}
	return out
}

func sources(defs []mcpconfig.Definition) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Source
	}
	return out
}
