// Command notes is a small stdio MCP server for nightwatch's quickstart: a
// note store that keeps notes in memory. With NOTES_REQUIRE_KEY=1 it refuses
// to start without NOTES_API_KEY, the way real servers crash under launchd
// when a key lives only in the login shell.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"sort"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type addInput struct {
	Title string `json:"title" jsonschema:"title of the note"`
	Body  string `json:"body" jsonschema:"text of the note"`
}

type listOutput struct {
	Titles []string `json:"titles"`
}

func main() {
	if os.Getenv("NOTES_REQUIRE_KEY") == "1" && os.Getenv("NOTES_API_KEY") == "" {
		fmt.Fprintln(os.Stderr, "notes: NOTES_API_KEY is not set; cannot start")
		os.Exit(1)
	}
	var mu sync.Mutex
	notes := map[string]string{}
	s := mcp.NewServer(&mcp.Implementation{Name: "example-notes", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add_note", Description: "Store a note"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in addInput) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			notes[in.Title] = in.Body
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stored " + in.Title}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "list_notes", Description: "List the titles of stored notes",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, listOutput, error) {
			mu.Lock()
			defer mu.Unlock()
			out := listOutput{Titles: []string{}}
			for t := range notes {
				out.Titles = append(out.Titles, t)
			}
			sort.Strings(out.Titles)
			return nil, out, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
