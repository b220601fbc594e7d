package mcpconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nightwatch-dev/nightwatch/internal/text"
)

// entryResult is what one mcpServers entry turned into: a server, or the
// reason Claude Code would silently drop it, or an error for a malformed
// entry. Exactly one of the three is set.
type entryResult struct {
	server  *Server
	dropped string
	err     error
}

// parseEntry reads one mcpServers entry the way Claude Code's schema does:
// only the fields of the entry's transport are read (others are ignored, as
// Claude Code strips them), and ${VAR} is expanded in command, args, env
// values, url and header values.
func parseEntry(name string, raw json.RawMessage, getenv func(string) (string, bool)) entryResult {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return entryResult{err: fmt.Errorf("server %q: entry must be a JSON object", name)}
	}

	var typ string
	if err := decodeField(fields, "type", &typ); err != nil {
		return entryResult{err: fmt.Errorf("server %q: %w", name, err)}
	}

	srv := &Server{Name: name, Raw: raw}
	switch typ {
	case "":
		if hasField(fields, "command") {
			srv.Transport = Stdio
		} else if hasField(fields, "url") {
			return entryResult{dropped: `it has "url" but no "type" (Claude Code needs "type": "http" or "sse")`}
		} else {
			return entryResult{dropped: `it has neither "command" nor "type"`}
		}
	case "stdio":
		srv.Transport = Stdio
	case "http", "streamable-http":
		srv.Transport = HTTP
	case "sse":
		srv.Transport = SSE
	case "ws":
		srv.Transport = WS
	default:
		return entryResult{dropped: fmt.Sprintf("unknown type %q%s (Claude Code knows stdio, http, sse, ws)", typ,
			text.DidYouMean(typ, []string{"stdio", "http", "sse", "ws", "streamable-http"}))}
	}

	if srv.Transport == Stdio {
		err := errors.Join(
			decodeField(fields, "command", &srv.Command),
			decodeField(fields, "args", &srv.Args),
			decodeField(fields, "env", &srv.Env),
		)
		if err != nil {
			return entryResult{err: fmt.Errorf("server %q: %w", name, err)}
		}
		if srv.Command == "" {
			return entryResult{dropped: fmt.Sprintf("its type %q has no \"command\"", typ)}
		}
	} else {
		err := errors.Join(
			decodeField(fields, "url", &srv.URL),
			decodeField(fields, "headers", &srv.Headers),
		)
		if err != nil {
			return entryResult{err: fmt.Errorf("server %q: %w", name, err)}
		}
		if srv.URL == "" {
			return entryResult{dropped: fmt.Sprintf("its type %q has no \"url\"", typ)}
		}
	}

	expandServer(srv, getenv)
	return entryResult{server: srv}
}

// expandServer expands ${VAR} in exactly the fields Claude Code expands and
// records every variable that had neither a value nor a default.
func expandServer(srv *Server, getenv func(string) (string, bool)) {
	var missing []string
	expandInto := func(s *string) {
		out, m := Expand(*s, getenv)
		*s = out
		missing = append(missing, m...)
	}
	expandInto(&srv.Command)
	for i := range srv.Args {
		expandInto(&srv.Args[i])
	}
	for k, v := range srv.Env {
		expandInto(&v)
		srv.Env[k] = v
	}
	expandInto(&srv.URL)
	for k, v := range srv.Headers {
		expandInto(&v)
		srv.Headers[k] = v
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		srv.Missing = slices.Compact(missing)
	}
}

func hasField(fields map[string]json.RawMessage, key string) bool {
	v, ok := fields[key]
	return ok && string(v) != "null"
}

// decodeField decodes fields[key] into dst when present. A JSON null counts
// as absent. The error names the field and the expected shape rather than
// Go types, because the reader is someone editing a JSON file.
func decodeField(fields map[string]json.RawMessage, key string, dst any) error {
	v, ok := fields[key]
	if !ok || string(v) == "null" {
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return fmt.Errorf("field %q must be %s", key, shapeOf(dst))
	}
	return nil
}

func shapeOf(dst any) string {
	switch dst.(type) {
	case *string:
		return "a string"
	case *[]string:
		return "an array of strings"
	case *map[string]string:
		return "an object of string values"
	default:
		return fmt.Sprintf("%T", dst)
	}
}
