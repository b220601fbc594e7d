package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
)

// section says which part of a file holds the servers of a source.
type section int

const (
	topLevelServers section = iota // {"mcpServers": {...}}
	projectServers                 // ~/.claude.json {"projects": {"<dir>": {"mcpServers": {...}}}}
)

// source is one place in the search order.
type source struct {
	path     string
	given    string // an explicit path as the user wrote it, for hints
	section  section
	scope    Scope
	explicit bool
}

// configFile is the part of a config file nightwatch reads. ~/.claude.json
// can be hundreds of KB of project history: decoding into this struct skips
// everything else without allocating it, and each project's mcpServers stays
// raw until the project is the one that matches the cwd.
type configFile struct {
	MCPServers json.RawMessage `json:"mcpServers"`
	Projects   map[string]struct {
		MCPServers json.RawMessage `json:"mcpServers"`
	} `json:"projects"`
}

// topLevelOnly has no Projects field so that settings files and .mcp.json
// are not judged on a key they do not use.
type topLevelOnly struct {
	MCPServers json.RawMessage `json:"mcpServers"`
}

// loadedFile is one file read from disk, kept so that a file used by two
// sources (~/.claude.json) is read and decoded once.
type loadedFile struct {
	config  configFile
	missing bool // does not exist: normal during the search
	failed  bool // could not be read or decoded at all
}

// Resolve finds every MCP server definition visible from opts.Cwd, the way
// Claude Code would, and returns the winner of each name. It never returns
// nil; everything that went wrong is in Problems.
//
// Search order, first definition of a name wins:
//
//  1. ~/.claude.json projects["<cwd or nearest ancestor>"].mcpServers (local)
//  2. <cwd>/.mcp.json (project)
//  3. <cwd>/.claude/settings.local.json
//  4. <cwd>/.claude/settings.json
//  5. ~/.claude.json mcpServers (user)
//  6. ~/.claude/settings.json
//
// With opts.ConfigDir (CLAUDE_CONFIG_DIR) the two home files are read from
// there instead, as Claude Code reads them.
//
// When opts.Explicit is non-empty those files, in order, replace the search.
func Resolve(opts Options) *Resolved {
	r := &resolver{
		out: &Resolved{
			Servers:  map[string]*Server{},
			Shadowed: map[string][]Definition{},
			Dropped:  map[string]string{},
		},
		getenv:  opts.Getenv,
		files:   map[string]*loadedFile{},
		visited: map[visitKey]bool{},
	}
	cwd := absOrEmpty(opts.Cwd)
	for _, src := range searchOrder(opts, cwd) {
		r.visit(src, cwd)
	}
	return r.out
}

func searchOrder(opts Options, cwd string) []source {
	if len(opts.Explicit) > 0 {
		sources := make([]source, 0, len(opts.Explicit))
		for _, p := range opts.Explicit {
			sources = append(sources, source{path: absOrSame(p), given: p, scope: ScopeExplicit, explicit: true})
		}
		return sources
	}
	home := opts.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	var sources []source
	claudeJSON, userSettings := "", ""
	if home != "" {
		claudeJSON = filepath.Join(home, ".claude.json")
		userSettings = filepath.Join(home, ".claude", "settings.json")
	}
	if opts.ConfigDir != "" {
		dir := absOrSame(opts.ConfigDir)
		claudeJSON = filepath.Join(dir, ".claude.json")
		userSettings = filepath.Join(dir, "settings.json")
	}
	if claudeJSON != "" && cwd != "" {
		sources = append(sources, source{path: claudeJSON, section: projectServers, scope: ScopeLocal})
	}
	if cwd != "" {
		sources = append(sources,
			source{path: filepath.Join(cwd, ".mcp.json"), scope: ScopeProject},
			source{path: filepath.Join(cwd, ".claude", "settings.local.json"), scope: ScopeProjectLocal},
			source{path: filepath.Join(cwd, ".claude", "settings.json"), scope: ScopeProjectShared},
		)
	}
	if claudeJSON != "" {
		sources = append(sources,
			source{path: claudeJSON, scope: ScopeUser},
			source{path: userSettings, scope: ScopeUserSettings},
		)
	}
	return sources
}

type resolver struct {
	out    *Resolved
	getenv func(string) (string, bool)
	files  map[string]*loadedFile
	// visited stops a file from being used twice for the same section, e.g.
	// when the cwd is the home directory and <cwd>/.claude/settings.json is
	// ~/.claude/settings.json: the earlier, stronger scope keeps it.
	visited map[visitKey]bool
}

type visitKey struct {
	path    string
	section section
}

func (r *resolver) visit(src source, cwd string) {
	key := visitKey{src.path, src.section}
	if r.visited[key] {
		return
	}
	r.visited[key] = true

	f := r.load(src)
	if f.missing || f.failed {
		return
	}
	raw, field := f.config.MCPServers, "mcpServers"
	if src.section == projectServers {
		dir, ok := nearestProject(f.config.Projects, cwd)
		if !ok {
			return
		}
		raw, field = f.config.Projects[dir].MCPServers, fmt.Sprintf("projects[%q].mcpServers", dir)
	}
	entries, err := orderedEntries(raw)
	if err != nil {
		r.problem(src, fmt.Errorf("%s: %s: %w", src.path, field, err))
		return
	}
	for _, e := range entries {
		r.add(src, e)
	}
}

// MaxConfigSize bounds a config file read: ~/.claude.json keeps every
// project's history and grows to tens of MiB over long use; 256 MiB is far
// above that and still safe to hold in memory.
const MaxConfigSize = 256 << 20

// load reads and decodes a file once, reporting a problem the first time.
func (r *resolver) load(src source) *loadedFile {
	if f, ok := r.files[src.path]; ok {
		return f
	}
	f := &loadedFile{}
	r.files[src.path] = f
	r.out.Searched = append(r.out.Searched, src.path)

	// Through atomicfile.Read: a FIFO or device where a config file should
	// be is refused at once, with its path, instead of hanging the hook.
	data, err := atomicfile.Read(src.path, MaxConfigSize)
	if err != nil {
		if isNotExist(err) && !src.explicit {
			f.missing = true
			return f
		}
		f.failed = true
		r.problem(src, explainReadError(src, err))
		return f
	}

	// Only ~/.claude.json has "projects", and the local-scope source always
	// loads it first; everything else decodes the top level alone.
	if src.section == projectServers {
		err = json.Unmarshal(data, &f.config)
	} else {
		var top topLevelOnly
		err = json.Unmarshal(data, &top)
		f.config.MCPServers = top.MCPServers
	}
	if err != nil {
		r.problem(src, fmt.Errorf("parse %s: %w", src.path, describeJSONError(data, err)))
		// A wrongly typed field elsewhere in the file (say "projects": [])
		// still leaves the rest decoded; a syntax error leaves nothing.
		var typeErr *json.UnmarshalTypeError
		f.failed = !errors.As(err, &typeErr)
	}
	return f
}

func (r *resolver) add(src source, e namedEntry) {
	res := parseEntry(e.name, e.raw, r.getenv)
	def := Definition{Source: src.path, Scope: src.scope}
	if res.err != nil {
		r.problem(src, fmt.Errorf("%s: %w", src.path, res.err))
	}
	if res.dropped != "" {
		if _, seen := r.out.Dropped[e.name]; !seen {
			r.out.Dropped[e.name] = fmt.Sprintf("%s (%s, %s)", res.dropped, src.path, src.scope)
		}
	}
	if _, taken := r.out.Servers[e.name]; taken {
		r.out.Shadowed[e.name] = append(r.out.Shadowed[e.name], def)
		return
	}
	if res.server == nil {
		return // dropped or broken: a weaker definition may still win
	}
	res.server.Source = src.path
	res.server.Scope = src.scope
	r.out.Servers[e.name] = res.server
	r.out.Names = append(r.out.Names, e.name)
}

func (r *resolver) problem(src source, err error) {
	r.out.Problems = append(r.out.Problems, Problem{
		Path:     src.path,
		Explicit: src.explicit,
		Err:      err,
		Message:  err.Error(),
	})
}

// nearestProject picks the projects key that is the cwd itself or its
// nearest ancestor, as Claude Code does for local-scope servers.
func nearestProject[V any](projects map[string]V, cwd string) (string, bool) {
	if cwd == "" {
		return "", false
	}
	if _, ok := projects[cwd]; ok {
		return cwd, true // the usual case: no need to scan every key
	}
	best, bestLen := "", -1
	for key := range projects {
		dir := filepath.Clean(key)
		if !filepath.IsAbs(dir) || !isWithin(cwd, dir) {
			continue
		}
		if len(dir) > bestLen {
			best, bestLen = key, len(dir)
		}
	}
	return best, bestLen >= 0
}

// isWithin reports whether path is dir or lies below it. Both are clean.
func isWithin(path, dir string) bool {
	if runtime.GOOS == "windows" {
		// Claude Code keys projects "C:/Users/…" or "c:/…" as its cwd was
		// spelled; Clean has turned the slashes, NTFS ignores the case.
		path, dir = strings.ToLower(path), strings.ToLower(dir)
	}
	if path == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator) // "/a" must not match "/ab"
	}
	return strings.HasPrefix(path, dir)
}

// namedEntry is one mcpServers member, in file order.
type namedEntry struct {
	name string
	raw  json.RawMessage
}

// orderedEntries lists the members of an mcpServers object in the order the
// file gives them, so Names follows the file rather than Go's map order. As
// with JSON.parse, a repeated name keeps its first position and last value.
func orderedEntries(raw json.RawMessage) ([]namedEntry, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("must be an object of server entries")
	}
	var entries []namedEntry
	index := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string) // object keys are always strings
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, err
		}
		if i, dup := index[name]; dup {
			entries[i].raw = value
			continue
		}
		index[name] = len(entries)
		entries = append(entries, namedEntry{name: name, raw: value})
	}
	return entries, nil
}

// isNotExist treats "a parent is not a directory" like "does not exist": a
// project whose .claude is a file simply has no .claude/settings.json.
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// explainReadError words a read failure for the person who has to fix it.
// For an explicit file, the whole search was replaced by it, so a missing
// file would otherwise look like "no servers configured" (the article's
// trap); say so, and point at the usual typos.
func explainReadError(src source, err error) error {
	if !src.explicit {
		return fmt.Errorf("read %s: %w", src.path, err)
	}
	var hints []string
	if isNotExist(err) {
		hints = append(hints, "the configured MCP config file does not exist and the default locations are not searched when one is given")
	}
	if src.given != src.path {
		hints = append(hints, fmt.Sprintf("given as %q", src.given))
	}
	if strings.HasPrefix(src.given, "~") {
		hints = append(hints, `a leading "~" was not expanded; write the home directory out or use ${HOME}`)
	} else if strings.Contains(src.given, "~") {
		hints = append(hints, `the path contains "~", but "~" is only expanded by a shell at the start of a path; write the home directory out or use ${HOME}`)
	}
	if strings.Contains(src.given, "$") {
		hints = append(hints, "the path contains an unexpanded variable")
	}
	if len(hints) == 0 {
		return fmt.Errorf("read explicit MCP config %s: %w", src.path, err)
	}
	return fmt.Errorf("read explicit MCP config %s: %w (%s)", src.path, err, strings.Join(hints, "; "))
}

// describeJSONError adds line:column to decoder errors, which only carry a
// byte offset.
func describeJSONError(data []byte, err error) error {
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr):
		line, col := lineColumn(data, syntaxErr.Offset)
		return fmt.Errorf("line %d column %d: %w", line, col, err)
	case errors.As(err, &typeErr):
		line, col := lineColumn(data, typeErr.Offset)
		return fmt.Errorf("line %d column %d: %w", line, col, err)
	}
	return err
}

// lineColumn converts a decoder offset (bytes read, including the offending
// byte) into a 1-based line and byte column of that byte.
func lineColumn(data []byte, offset int64) (line, col int) {
	pos := int(min(max(offset-1, 0), int64(len(data))))
	before := data[:pos]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = pos - bytes.LastIndexByte(before, '\n')
	return line, col
}

// absOrEmpty makes a cwd absolute; an empty cwd stays empty so that the
// project sources are skipped rather than guessed.
func absOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	return absOrSame(p)
}

func absOrSame(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
