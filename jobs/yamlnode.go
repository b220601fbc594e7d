package jobs

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/text"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// The batch file is decoded into a yaml.Node tree and walked by hand rather
// than into tagged structs: that way every field, known or not, has its
// line for the message, every problem is collected instead of the first
// one stopping the decoder, and ${VAR} expansion happens per value with the
// line of the value that needed it.

// maxAliasVisits bounds what aliases add to the walk. Aliases are
// followed, and a small file can alias a list of a thousand items from each
// of a thousand jobs (a "billion laughs"). The file's own nodes are always
// walked (the 4 MiB file bound limits those): a legitimate 10,000-job batch
// without aliases has about 200,000 of them and must load. A file whose
// aliases add more nodes than this is an accident or an attack.
const maxAliasVisits = 200_000

// maxMergeDepth bounds nested merge keys (<<), which can alias themselves.
const maxMergeDepth = 16

// pair is one key of a mapping with its value.
type pair struct {
	key     string
	keyNode *yaml.Node
	val     *yaml.Node
}

func (p pair) line() int { return p.keyNode.Line }

// node follows an alias to its anchored node and counts the visit. Once
// the budget is spent every node reads as absent, so the walk winds down.
func (l *loader) node(n *yaml.Node) *yaml.Node {
	if l.tooBig {
		return nil
	}
	for hops := 0; n != nil && n.Kind == yaml.AliasNode; hops++ {
		if hops > maxMergeDepth {
			return nil
		}
		n = n.Alias
	}
	l.visits++
	if l.visits > l.ownNodes+maxAliasVisits {
		if !l.tooBig {
			l.tooBig = true
			l.problem(0, "", "%s", aliasBoundMessage(l.ownNodes))
		}
		return nil
	}
	return n
}

func aliasBoundMessage(own int) string {
	return fmt.Sprintf("YAML aliases expand the file by more than %d nodes (it has %d of its own); write the repeated parts out or share less through aliases", maxAliasVisits, own)
}

// countNodes counts the nodes of the file itself, not following aliases.
func countNodes(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	count := 1
	for _, c := range n.Content {
		count += countNodes(c)
	}
	return count
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// join extends a field path with a key; a key that is not a plain name is
// quoted and escaped (servers."bad\x1b[2J"), as job names are.
func join(parent, key string) string {
	if !text.PlainName(key) {
		key = text.Name(key)
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "something else"
}

// pairs returns the keys of a mapping in file order, with merge keys (<<)
// applied: explicit keys win over merged ones, as in YAML. A null value is
// an empty mapping. ok is false when n is not a mapping.
func (l *loader) pairs(n *yaml.Node, field string) (ps []pair, ok bool) {
	return l.pairsDepth(n, field, 0)
}

func (l *loader) pairsDepth(n *yaml.Node, field string, depth int) ([]pair, bool) {
	n = l.node(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		l.problem(n.Line, field, "must be a mapping (key: value), not %s", kindName(n))
		return nil, false
	}
	var ps, merged []pair
	seen := map[string]int{} // key → line of its first explicit appearance
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := l.node(n.Content[i]), n.Content[i+1]
		if k == nil {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			l.problem(k.Line, field, "keys must be plain names, not %s", kindName(k))
			continue
		}
		if k.Tag == "!!merge" {
			if depth >= maxMergeDepth {
				l.problem(k.Line, field, "merge keys (<<) nest too deeply")
				continue
			}
			merged = append(merged, l.mergeSources(v, field, depth)...)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			l.problem(k.Line, join(field, k.Value), "defined twice (first at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		ps = append(ps, pair{key: k.Value, keyNode: k, val: v})
	}
	// Merged keys come after the explicit ones; the first source to give
	// a key wins, as YAML says for "<<: [*a, *b]".
	for _, p := range merged {
		if _, dup := seen[p.key]; !dup {
			seen[p.key] = p.line()
			ps = append(ps, p)
		}
	}
	return ps, true
}

// mergeSources reads the value of a "<<" key: one mapping or a list of them.
func (l *loader) mergeSources(v *yaml.Node, field string, depth int) []pair {
	v = l.node(v)
	if v == nil {
		return nil
	}
	if v.Kind == yaml.SequenceNode {
		var out []pair
		for _, m := range v.Content {
			ps, _ := l.pairsDepth(m, field, depth+1)
			out = append(out, ps...)
		}
		return out
	}
	ps, _ := l.pairsDepth(v, field, depth+1)
	return ps
}

// fields reads a mapping whose keys must be among known: anything else is
// an unknown field, which is an error (a typo'd "timout" must not silently
// mean "use the default").
func (l *loader) fields(n *yaml.Node, field string, known ...string) map[string]pair {
	ps, _ := l.pairs(n, field)
	out := make(map[string]pair, len(ps))
	for _, p := range ps {
		if !slices.Contains(known, p.key) {
			l.problem(p.line(), join(field, p.key), "unknown field%s (known: %s)", text.DidYouMean(p.key, known), strings.Join(known, ", "))
			continue
		}
		out[p.key] = p
	}
	return out
}

// scalar returns the node when it is a non-null scalar. A null is absent
// (ok false, no problem); a list or mapping is a problem.
func (l *loader) scalar(n *yaml.Node, field string) (*yaml.Node, bool) {
	n = l.node(n)
	if isNull(n) {
		return nil, false
	}
	if n.Kind != yaml.ScalarNode {
		l.problem(n.Line, field, "must be a single value, not %s", kindName(n))
		return nil, false
	}
	if strings.IndexByte(n.Value, 0) >= 0 {
		// exec refuses arguments and environment values with a NUL.
		l.problem(n.Line, field, "contains a NUL byte")
		return nil, false
	}
	return n, true
}

// text reads a scalar as written, without ${VAR} expansion: names, and
// the prompt, which is the user's prose where "${" may be meant literally.
func (l *loader) text(n *yaml.Node, field string) (string, int, bool) {
	s, ok := l.scalar(n, field)
	if !ok {
		return "", 0, false
	}
	return s.Value, s.Line, true
}

// str reads a scalar and expands ${VAR} and ${VAR:-default} in it.
func (l *loader) str(n *yaml.Node, field string) (string, int, bool) {
	s, ok := l.scalar(n, field)
	if !ok {
		return "", 0, false
	}
	v, ok := l.expand(s.Value, s.Line, field)
	return v, s.Line, ok
}

// expand resolves variables with Claude Code's rules (mcpconfig.Expand).
// A variable with neither a value nor a default is an error here, where
// Claude Code would pass the literal text on: nobody is awake at 2 a.m. to
// notice a server started with "${API_KEY}" as its key.
func (l *loader) expand(s string, line int, field string) (string, bool) {
	lookup := l.lookup
	if refs := l.refs; refs != nil {
		lookup = func(name string) (string, bool) {
			refs[name] = true
			return l.lookup(name)
		}
	}
	out, missing := mcpconfig.Expand(s, lookup)
	if l.reading && field != "state_dir" {
		for _, name := range missing {
			l.warn(line, field, "variable ${%s} is not set: read as empty (`nightwatch run` needs it)", name)
		}
		return out, true
	}
	for _, name := range missing {
		l.problem(line, field, "variable ${%s} is not set and has no default (set it in env_file, env or the environment, or write ${%s:-default})", name, name)
	}
	return out, len(missing) == 0
}

// seq returns the items of a list; null is an empty list.
func (l *loader) seq(n *yaml.Node, field string) ([]*yaml.Node, bool) {
	n = l.node(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.SequenceNode {
		l.problem(n.Line, field, "must be a list ([a, b]), not %s", kindName(n))
		return nil, false
	}
	return n.Content, true
}

// item is one string of a list or map, with its line.
type item struct {
	key   string // for maps
	value string
	line  int
	// literal: the value is written in the file, not taken from a
	// ${VAR} (for maps).
	literal bool
}

// strList reads a list of strings, expanded or not.
func (l *loader) strList(n *yaml.Node, field string, expand bool) []item {
	nodes, _ := l.seq(n, field)
	out := make([]item, 0, len(nodes))
	for i, c := range nodes {
		if l.tooBig {
			break
		}
		f := fmt.Sprintf("%s[%d]", field, i)
		read := l.text
		if expand {
			read = l.str
		}
		if v, line, ok := read(c, f); ok {
			out = append(out, item{value: v, line: line})
		} else if isNull(l.node(c)) {
			l.problem(c.Line, f, "must not be empty")
		}
	}
	return out
}

// strMap reads a mapping of strings (env, headers) in file order, values
// expanded. A key with no value is an error: "KEY:" is almost always a
// forgotten value, and "" says empty on purpose.
func (l *loader) strMap(n *yaml.Node, field string) []item {
	ps, _ := l.pairs(n, field)
	out := make([]item, 0, len(ps))
	for _, p := range ps {
		f := join(field, p.key)
		if isNull(l.node(p.val)) {
			l.problem(p.line(), f, `has no value (write "" for an empty one)`)
			continue
		}
		if v, _, ok := l.str(p.val, f); ok {
			out = append(out, item{key: p.key, value: v, line: p.line(), literal: !strings.Contains(l.node(p.val).Value, "${")})
		}
	}
	return out
}

func toMap(items []item) map[string]string {
	if len(items) == 0 {
		return nil
	}
	m := make(map[string]string, len(items))
	for _, it := range items {
		m[it.key] = it.value
	}
	return m
}

// integer reads a whole number that must be at least lowest.
func (l *loader) integer(n *yaml.Node, field string, lowest int) (int, int, bool) {
	s, line, ok := l.str(n, field)
	if !ok {
		return 0, 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		l.problem(line, field, "must be a whole number, not %q", s)
		return 0, 0, false
	}
	if v < lowest {
		l.problem(line, field, "must be %d or more, not %d", lowest, v)
		return 0, 0, false
	}
	return v, line, true
}

// boolean reads true or false (YAML 1.2: no yes/no/on/off, which YAML 1.1
// readers disagree about).
func (l *loader) boolean(n *yaml.Node, field string) (bool, bool) {
	s, line, ok := l.str(n, field)
	if !ok {
		return false, false
	}
	switch s {
	case "true", "True", "TRUE":
		return true, true
	case "false", "False", "FALSE":
		return false, true
	}
	l.problem(line, field, "must be true or false, not %q", s)
	return false, false
}

// money reads an amount of dollars, 0 or more.
func (l *loader) money(n *yaml.Node, field string) (float64, bool) {
	s, line, ok := l.str(n, field)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		l.problem(line, field, "must be an amount in dollars such as 20 or 7.5, not %q", s)
		return 0, false
	}
	if v < 0 {
		l.problem(line, field, "must be 0 (no limit) or more, not %v", v)
		return 0, false
	}
	return v, true
}

// duration reads "45m", "90s", "1h30m". A bare number is refused although
// knobs.ParseDuration reads it as milliseconds: in a batch file "timeout:
// 45" is far more likely to mean minutes than 45 ms.
func (l *loader) duration(n *yaml.Node, field string) (time.Duration, bool) {
	s, line, ok := l.str(n, field)
	if !ok {
		return 0, false
	}
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		l.problem(line, field, "%q needs a unit: write 45m, 90s or 1h30m", s)
		return 0, false
	}
	if _, err := time.ParseDuration(s); err != nil {
		l.problem(line, field, "%q is not a duration: write 45m, 90s or 1h30m", s)
		return 0, false
	}
	d, err := knobs.ParseDuration(s)
	if err != nil {
		l.problem(line, field, "%s %v", s, err)
		return 0, false
	}
	return d, true
}
