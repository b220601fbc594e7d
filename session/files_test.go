package session

import (
	"strings"
	"testing"
)

func TestChangedFiles(t *testing.T) {
	use := func(id, name, input string) string {
		return `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}]}}`
	}
	result := func(id string, isError bool) string {
		e := "false"
		if isError {
			e = "true"
		}
		return `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"` + id + `","is_error":` + e + `,"content":"ok"}]}}`
	}
	for _, tc := range []struct {
		name   string
		stream []string
		want   string
	}{
		{name: "none", stream: []string{`{"type":"system","subtype":"init"}`, `{"type":"result","result":"done"}`}},
		{name: "written and edited, once each", stream: []string{
			use("1", "Write", `{"file_path":"/w/a.md","content":"x"}`), result("1", false),
			use("2", "Edit", `{"file_path":"/w/b.go","old_string":"a","new_string":"b"}`), result("2", false),
			use("3", "Edit", `{"file_path":"/w/a.md"}`), result("3", false),
			use("4", "NotebookEdit", `{"notebook_path":"/w/n.ipynb"}`), result("4", false),
		}, want: "/w/a.md,/w/b.go,/w/n.ipynb"},
		{name: "refused or failed: nothing changed", stream: []string{
			use("1", "Write", `{"file_path":"/w/denied"}`), result("1", true),
			use("2", "Edit", `{"file_path":"/w/unanswered"}`),
		}},
		{name: "not a file tool, or no path", stream: []string{
			use("1", "Read", `{"file_path":"/w/read"}`), result("1", false),
			use("2", "mcp__notes__write", `{"file_path":"/w/mcp"}`), result("2", false),
			use("3", "Write", `{"file_path":7}`), result("3", false),
			use("4", "Write", `"not an object"`), result("4", false),
			`not json at all`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ChangedFiles(strings.NewReader(strings.Join(tc.stream, "\n")))
			if err != nil || strings.Join(got, ",") != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func FuzzChangedFiles(f *testing.F) {
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"1","name":"Write","input":{"file_path":"/a"}}]}}` + "\n" +
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"1","content":"ok"}]}}`))
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"","name":"Edit","input":null}]}}`))
	f.Fuzz(func(t *testing.T, stream []byte) {
		got, err := ChangedFiles(strings.NewReader(string(stream)))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > maxChangedFiles {
			t.Fatalf("%d files", len(got))
		}
		for _, p := range got {
			if p == "" {
				t.Fatal("an empty path")
			}
		}
	})
}
