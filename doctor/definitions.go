package doctor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

const definitionsTitle = "servers the hook can see"

// definitions warns when the hook is registered but sessions are given MCP
// servers it cannot read a definition of: it can then neither probe them
// nor tell the model they are down. Such servers come from `--mcp-config
// FILE` (the common headless pattern: in the batch's agent.args, or in a
// launchd/systemd entry that runs claude itself), from a job that allows
// the tools of a server that is not among its servers (a plugin, a
// claude.ai connector, another config), or from a CLAUDE_CONFIG_DIR whose
// .claude.json the hook's config search does not read.
func (e *env) definitions(context.Context) []Check {
	var out []Check
	add := func(detail, fix string) {
		out = append(out, Check{ID: "definitions", Title: definitionsTitle, Level: Warn, Detail: detail, Fix: fix})
	}
	if b := e.batch; b != nil {
		if files := mcpConfigArgs(b.Agent.Args); len(files) > 0 {
			add(fmt.Sprintf("agent.args in %s pass --mcp-config %s: those servers reach every session, but the hook only reads the definitions of the job's own servers, so their failures are never probed or blocked",
				b.File, strings.Join(files, " ")),
				fmt.Sprintf("define those servers under servers: in %s and name them in each job's servers: (the supervisor then hands the hook their definitions), and drop --mcp-config from agent.args; for sessions you start yourself with --mcp-config, hand the hook the same file: NIGHTWATCH_MCP_CONFIG=%s",
					b.File, strings.Join(files, string(os.PathListSeparator))))
		}
		unseen := map[string][]string{} // server -> jobs that allow its tools without it
		var order []string
		for _, j := range b.Jobs {
			own := map[string]bool{}
			for _, s := range j.Servers {
				own[mcpconfig.NormalizeName(s)] = true
			}
			for _, tool := range j.AllowedTools {
				server, ok := toolServer(tool)
				if !ok || own[server] || slices.Contains(unseen[server], j.Name) {
					continue
				}
				if unseen[server] == nil {
					order = append(order, server)
				}
				unseen[server] = append(unseen[server], j.Name)
			}
		}
		for _, server := range order {
			jobs := unseen[server]
			add(fmt.Sprintf("job(s) %s allow mcp__%s__ tools, but %q is not among their servers: the hook has no definition of it (a plugin, a claude.ai connector or another config), so its failures are never probed or blocked",
				strings.Join(jobs, ", "), server, server),
				fmt.Sprintf("define %q under servers: in %s and add it to the servers: of %s; a server nightwatch cannot define (plugin, claude.ai connector) stays unprotected", server, b.File, strings.Join(jobs, ", ")))
		}
	}
	if e.userRegistered() {
		e.scheduledMCPConfig(add)
		if dir, set := e.Getenv(envClaudeConfigDir); set && dir != "" {
			moved := filepath.Join(dir, ".claude.json")
			r := mcpconfig.Resolve(e.knobs.ConfigOptions(e.Cwd, e.Home, e.Getenv))
			if _, err := os.Stat(moved); err == nil && !slices.Contains(r.Searched, moved) {
				add(fmt.Sprintf("%s=%s moves Claude Code's .claude.json to %s, which the hook does not read (it reads %s): the servers defined there are invisible to it",
					envClaudeConfigDir, dir, moved, strings.Join(r.Searched, ", ")),
					fmt.Sprintf("hand the hook the file: export NIGHTWATCH_MCP_CONFIG=%s (a path list: add %s and .mcp.json files to keep them too)",
						moved, filepath.Join(dir, "settings.json")))
			}
		}
	}
	if len(out) == 0 {
		out = append(out, ok("definitions", definitionsTitle, "every server sessions are given has a definition the hook reads"))
	}
	return out
}

// userRegistered reports whether nightwatch's hook is registered in a
// settings file every session reads (the user's or the managed ones).
func (e *env) userRegistered() bool {
	for _, sf := range e.settingsFiles() {
		if !sf.user {
			continue
		}
		s, err := readSettings(sf.path)
		if err != nil || s == nil {
			continue
		}
		for _, h := range s.commands() {
			if nightwatchHook.MatchString(h.command) && slices.Contains(hookEvents, h.event) {
				return true
			}
		}
	}
	return false
}

// scheduledMCPConfig finds launchd and systemd entries that run claude
// with --mcp-config themselves while their environment does not hand the
// hook those files.
func (e *env) scheduledMCPConfig(add func(detail, fix string)) {
	check := func(entry string, args []string, vars map[string]string, fix func(value string) string) {
		// A wrapper (sh -c "claude -p … --mcp-config f") holds the command
		// line in one argument: read its words too.
		var words []string
		for _, a := range args {
			words = append(words, strings.Fields(a)...)
		}
		if !runsClaude(words) {
			return
		}
		files := mcpConfigArgs(words)
		if len(files) == 0 {
			return
		}
		handed := ""
		for _, name := range knobs.EnvMCPConfig {
			if v := vars[name]; v != "" {
				handed = v
				break
			}
		}
		var missing []string
		for _, f := range files {
			if !slices.Contains(filepath.SplitList(handed), f) {
				missing = append(missing, f)
			}
		}
		if len(missing) == 0 {
			return
		}
		value := strings.Join(missing, string(os.PathListSeparator))
		if handed != "" {
			value = handed + string(os.PathListSeparator) + value
		}
		add(fmt.Sprintf("%s runs claude with --mcp-config %s, but its environment does not hand the hook that file (NIGHTWATCH_MCP_CONFIG): those servers' failures are never probed or blocked",
			entry, strings.Join(missing, " ")), fix(value))
	}
	for _, p := range globFiles(e.LaunchAgentsDir, "*.plist") {
		vars, args, err := readPlist(p)
		if err != nil {
			continue
		}
		check(p, args, vars, func(v string) string {
			return fmt.Sprintf("add <key>NIGHTWATCH_MCP_CONFIG</key><string>%s</string> to EnvironmentVariables in %s, then: launchctl unload %s && launchctl load %s", v, p, p, p)
		})
	}
	for _, p := range globFiles(e.SystemdUserDir, "*.service") {
		vars := systemdEnv(p)
		for _, args := range systemdExecStart(p) {
			check(p, args, vars, func(v string) string {
				return fmt.Sprintf("add Environment=\"NIGHTWATCH_MCP_CONFIG=%s\" to the [Service] section of %s, then: systemctl --user daemon-reload", v, p)
			})
		}
	}
}

// mcpConfigArgs returns the files of every --mcp-config in args (the flag
// takes one or more files, up to the next flag; --mcp-config=FILE too).
func mcpConfigArgs(args []string) []string {
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if v, ok := strings.CutPrefix(a, "--mcp-config="); ok {
			files = append(files, v)
			continue
		}
		if a != "--mcp-config" {
			continue
		}
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			files = append(files, args[i])
		}
	}
	return files
}

// runsClaude reports whether a command line's words start Claude Code: its
// program, or the program a shell or env wrapper runs, is named claude.
func runsClaude(words []string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return filepath.Base(w) == "claude" })
}

// toolServer returns the server of an allowed_tools entry naming MCP tools
// ("mcp__notes", "mcp__notes__*", "mcp__notes__echo").
func toolServer(tool string) (string, bool) {
	rest, ok := strings.CutPrefix(tool, "mcp__")
	if !ok || rest == "" {
		return "", false
	}
	server, _, _ := strings.Cut(rest, "__")
	return server, server != "" && server != "*"
}

// systemdExecStart returns the words of each ExecStart= line of a unit
// (a leading -, @, : or + prefix is dropped).
func systemdExecStart(path string) [][]string {
	data, err := atomicfile.Read(path, maxUnitSize)
	if err != nil {
		return nil
	}
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "ExecStart=")
		if !ok {
			continue
		}
		words := unitWords(strings.TrimLeft(rest, "-@:+!"))
		if len(words) > 0 {
			out = append(out, words)
		}
	}
	return out
}

// maxUnitSize bounds a plist, unit or settings file doctor reads (read
// through atomicfile.Read, so a FIFO or device is refused, never waited
// on): such files are a few KiB.
const maxUnitSize = 16 << 20
