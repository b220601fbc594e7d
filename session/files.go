package session

import (
	"encoding/json"
	"io"
	"slices"
)

// fileTools are Claude Code's own tools that change a file, and the field
// of their input that names it.
var fileTools = map[string]string{"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}

// maxChangedFiles bounds the files ChangedFiles returns.
const maxChangedFiles = 200

// ChangedFiles reads a session's stream (its stream.jsonl) and returns
// the files its own file tools (Write, Edit, MultiEdit, NotebookEdit)
// changed: calls whose result came back without an error, in order, each
// once, at most maxChangedFiles. A call refused or failed changed nothing;
// a change made another way (a shell command, an MCP tool) is not seen.
func ChangedFiles(r io.Reader) ([]string, error) {
	asked := map[string]string{} // tool_use id → the file it names
	var out []string
	err := ReadLines(r, nil, func(line []byte) {
		for id, path := range fileToolUses(line) {
			asked[id] = path
		}
		for _, res := range ParseLine(line).ToolResults {
			path, ok := asked[res.ID]
			if !ok {
				continue
			}
			delete(asked, res.ID)
			if !res.IsError && !slices.Contains(out, path) && len(out) < maxChangedFiles {
				out = append(out, path)
			}
		}
	})
	return out, err
}

// fileToolUses are an assistant event's calls of the file tools: tool_use
// id → the file it names.
func fileToolUses(line []byte) map[string]string {
	var ev struct {
		Type    string `json:"type"`
		Message struct {
			Content []struct {
				Type  string          `json:"type"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
		} `json:"message"`
	}
	if len(line) > maxParsedLine || !decodeLenient(line, &ev) || ev.Type != "assistant" {
		return nil
	}
	var out map[string]string
	for _, b := range ev.Message.Content {
		field, ok := fileTools[b.Name]
		if b.Type != "tool_use" || !ok || b.ID == "" {
			continue
		}
		var in map[string]any
		if !decodeLenient(b.Input, &in) {
			continue
		}
		if p, _ := in[field].(string); p != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[b.ID] = p
		}
	}
	return out
}
