package mcpserver_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
)

// The tools behave as documented, over every transport the package serves.
func TestTools(t *testing.T) {
	t.Setenv("NW_MCPSERVER_TEST_VAR", "from-the-environment")
	bin := testkit.BuildTestServer(t)
	transports := map[string]func(t *testing.T) mcp.Transport{
		"streamable": func(t *testing.T) mcp.Transport {
			ts := httptest.NewServer(mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{}))
			t.Cleanup(ts.Close)
			return &mcp.StreamableClientTransport{Endpoint: ts.URL + mcpserver.StreamablePath, MaxRetries: -1, DisableStandaloneSSE: true}
		},
		"streamable json": func(t *testing.T) mcp.Transport {
			ts := httptest.NewServer(mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{JSONResponse: true}))
			t.Cleanup(ts.Close)
			return &mcp.StreamableClientTransport{Endpoint: ts.URL + mcpserver.StreamablePath, MaxRetries: -1, DisableStandaloneSSE: true}
		},
		"sse": func(t *testing.T) mcp.Transport {
			ts := httptest.NewServer(mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{SSE: true}))
			t.Cleanup(ts.Close)
			return &mcp.SSEClientTransport{Endpoint: ts.URL + mcpserver.SSEPath}
		},
		"stdio binary": func(t *testing.T) mcp.Transport {
			return &mcp.CommandTransport{Command: exec.Command(bin), TerminateDuration: 200 * time.Millisecond}
		},
	}
	for name, transport := range transports {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "0"}, nil)
			cs, err := client.Connect(ctx, transport(t), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ServerInfo.Name; got != mcpserver.ServerName {
				t.Errorf("server name %q", got)
			}

			tools, err := cs.ListTools(ctx, &mcp.ListToolsParams{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			if !slices.Equal(sorted(names), sorted(mcpserver.ToolNames)) {
				t.Errorf("tools %v, want %v", names, mcpserver.ToolNames)
			}

			call := func(name string, args map[string]any) (*mcp.CallToolResult, error) {
				return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			}
			expectText(t, call, "echo", map[string]any{"message": "hi"}, false, "hi")
			expectText(t, call, "fail", map[string]any{"text": "boom"}, true, "boom")
			expectText(t, call, "env", map[string]any{"name": "NW_MCPSERVER_TEST_VAR"}, false, "from-the-environment")
			expectText(t, call, "env", map[string]any{"name": "NW_MCPSERVER_UNSET"}, true, "NW_MCPSERVER_UNSET is not set")
			expectText(t, call, "slow", map[string]any{"ms": 20}, false, "slept 20ms")

			if _, err := call("rpcerr", nil); err == nil || !strings.Contains(err.Error(), "failed on purpose") {
				t.Errorf("rpcerr: %v, want a JSON-RPC error", err)
			}
			hangCtx, hangCancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer hangCancel()
			if _, err := cs.CallTool(hangCtx, &mcp.CallToolParams{Name: "hang"}); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("hang: %v, want a deadline", err)
			}
			if name != "stdio binary" {
				expectText(t, call, "die", nil, true, "cannot exit")
			}
		})
	}
}

// die ends the stdio server mid-call.
func TestDie(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.Command(testkit.BuildTestServer(t))
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 200 * time.Millisecond},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "die", Arguments: map[string]any{"code": 4}}); err == nil {
		t.Fatal("die answered")
	}
	_ = cs.Close()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 4 {
		t.Errorf("process state %v, want exit status 4", cmd.ProcessState)
	}
}

func expectText(t *testing.T, call func(string, map[string]any) (*mcp.CallToolResult, error),
	name string, args map[string]any, isError bool, want string) {
	t.Helper()
	res, err := call(name, args)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError != isError || !strings.Contains(text, want) {
		t.Errorf("%s: isError=%v %q, want isError=%v with %q", name, res.IsError, text, isError, want)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
