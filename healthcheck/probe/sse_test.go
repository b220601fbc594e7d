package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

func TestSSE(t *testing.T) {
	tests := []struct {
		mode      string
		timeout   time.Duration
		listTools bool
		want      Verdict
		status    int
		reason    []string
	}{
		{mode: "healthy", listTools: true, want: Healthy, status: http.StatusAccepted,
			reason: []string{"answered initialize as " + mcpserver.ServerName}},
		{mode: "healthy", want: Healthy, status: http.StatusAccepted},
		{mode: "401", want: AuthRequired, status: 401, reason: []string{"WWW-Authenticate present"}},
		{mode: "429=30", want: RateLimited, status: 429},
		{mode: "503", want: Unavailable, status: 503},
		{mode: "404", want: NotMCP, status: 404, reason: []string{"no MCP endpoint"}},
		{mode: "html", want: NotMCP, status: 200, reason: []string{"text/html, not an event stream"}},
		{mode: "hang", timeout: time.Second, want: Transport, reason: []string{"within 1s"}},
		{mode: "discover-only", want: Healthy, status: http.StatusOK, reason: []string{"-32601"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s tools=%v", tt.mode, tt.listTools), func(t *testing.T) {
			t.Parallel()
			fs := newFaultServer(t, tt.mode, mcpserver.HTTPOptions{SSE: true})
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			srv := &mcpconfig.Server{Transport: mcpconfig.SSE, URL: fs.URL + mcpserver.SSEPath}
			start := time.Now()
			res := SSE(context.Background(), srv, Options{Timeout: timeout, ListTools: tt.listTools})
			requireNotHung(t, start, timeout)
			t.Logf("%+v", res)
			if res.Verdict != tt.want || res.Status != tt.status {
				t.Fatalf("got %s %d (%q), want %s %d", res.Verdict, res.Status, res.Reason, tt.want, tt.status)
			}
			for _, part := range tt.reason {
				if !strings.Contains(res.Reason, part) {
					t.Errorf("reason %q lacks %q", res.Reason, part)
				}
			}
			wantTools := -1
			if tt.listTools && tt.want == Healthy {
				wantTools = len(mcpserver.ToolNames)
			}
			if res.Tools != wantTools {
				t.Errorf("tools %d, want %d", res.Tools, wantTools)
			}
		})
	}
}

// An SSE probe of a Streamable endpoint is NotMCP with a hint; a type http
// probe of an SSE endpoint falls back to SSE, as Claude Code 2.1.332 does
// (verified: "initialize POST rejected …; trying legacy HTTP+SSE", status
// connected; 2.1.197 marks the server failed).
func TestSSEWrongTransport(t *testing.T) {
	streamable := newFaultServer(t, "healthy", mcpserver.HTTPOptions{})
	sse := newFaultServer(t, "healthy", mcpserver.HTTPOptions{SSE: true})

	res := SSE(context.Background(), &mcpconfig.Server{Transport: mcpconfig.SSE, URL: streamable.URL + "/mcp"}, Options{Timeout: 5 * time.Second})
	if res.Verdict != NotMCP {
		t.Errorf("SSE probe of a Streamable endpoint: %s %q", res.Verdict, res.Reason)
	}
	res = HTTP(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: sse.URL + "/sse",
		Headers: map[string]string{"X-Api-Key": "sse-key-1"}}, Options{Timeout: 5 * time.Second, ListTools: true})
	t.Logf("%+v", res)
	if res.Verdict != Healthy || !res.LegacySSE || res.Tools != len(mcpserver.ToolNames) || res.Era != Legacy ||
		!strings.Contains(res.Reason, "legacy HTTP+SSE endpoint") || !strings.Contains(res.Reason, `"type": "sse"`) {
		t.Errorf("Streamable probe of an SSE endpoint: %+v", res)
	}
	// POST discover, POST initialize (both refused by the SSE handler),
	// then the event stream and its message POSTs, all with the headers.
	reqs := sse.requests()
	if len(reqs) < 4 || reqs[0].Method != http.MethodPost || reqs[1].Method != http.MethodPost || reqs[2].Method != http.MethodGet {
		t.Errorf("requests %v", reqs)
	}
	for _, r := range reqs {
		if r.Header.Get("X-Api-Key") != "sse-key-1" {
			t.Errorf("%s %s without the configured header", r.Method, r.URL)
		}
	}
}

// Hand-written SSE servers for what the go-sdk handler never does.
func TestSSEMisbehavingServers(t *testing.T) {
	endpointThen := func(endpoint string, post http.HandlerFunc) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				post(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, ": hello\n\nevent: endpoint\ndata: %s\n\n", endpoint)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
	}
	accept := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	}
	tests := []struct {
		name    string
		handler http.Handler
		want    Verdict
		reason  string
	}{
		{"endpoint on another origin", endpointThen("http://elsewhere.invalid/message", accept), NotMCP,
			"endpoint event points to another origin (http://elsewhere.invalid/message)"},
		{"POST accepted, never answered on the stream", endpointThen("/message?session=1", accept), Transport,
			"no answer to initialize within 1s"},
		{"POST refused", endpointThen("/message", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		}), Unavailable, "HTTP 503"},
		{"stream closed before the endpoint", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: ping\ndata: {}\n\n")
		}), Transport, "event stream ended before the endpoint event"},
		{"answers inline in the POST", endpointThen("/message", func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			json.NewDecoder(r.Body).Decode(&req)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","serverInfo":{"name":"inline"}}}`, req.ID)
		}), Healthy, "answered initialize as inline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(tt.handler)
			defer ts.Close()
			start := time.Now()
			res := SSE(context.Background(), &mcpconfig.Server{Transport: mcpconfig.SSE, URL: ts.URL + "/sse"}, Options{Timeout: time.Second})
			requireNotHung(t, start, time.Second)
			if res.Verdict != tt.want || !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("got %s %q, want %s with %q", res.Verdict, res.Reason, tt.want, tt.reason)
			}
		})
	}
}
