// Command search is a small Streamable HTTP MCP server for nightwatch's
// quickstart. It listens on -addr (default 127.0.0.1:8931) at /mcp and, when
// SEARCH_TOKEN is set, answers 401 to requests without
// "Authorization: Bearer $SEARCH_TOKEN".
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type searchInput struct {
	Query string `json:"query" jsonschema:"what to look for"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8931", "listen address")
	flag.Parse()
	s := mcp.NewServer(&mcp.Implementation{Name: "example-search", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Search the example corpus",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in searchInput) (*mcp.CallToolResult, any, error) {
			text := "no results for " + in.Query
			if strings.Contains(strings.ToLower(in.Query), "nightwatch") {
				text = "1 result: nightwatch keeps overnight Claude Code sessions away from dead MCP servers"
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	token := os.Getenv("SEARCH_TOKEN")
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="example-search"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	log.Printf("example search MCP server on http://%s/mcp", *addr)
	log.Fatal(http.ListenAndServe(*addr, mux))
}
