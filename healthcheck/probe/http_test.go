package probe

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// faultServer is the in-process test server behind httptest, with a mode
// the test sets and a log of the requests it saw.
type faultServer struct {
	*httptest.Server
	mode atomic.Pointer[mcpserver.Mode]

	mu   sync.Mutex
	seen []*http.Request
}

func newFaultServer(t *testing.T, mode string, opts mcpserver.HTTPOptions) *faultServer {
	t.Helper()
	fs := &faultServer{}
	fs.setMode(t, mode)
	opts.Modes = func() mcpserver.Mode { return *fs.mode.Load() }
	opts.Observe = func(r *http.Request) {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		fs.seen = append(fs.seen, r.Clone(context.Background()))
	}
	fs.Server = httptest.NewServer(mcpserver.NewHTTPHandler(opts))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *faultServer) setMode(t *testing.T, mode string) {
	t.Helper()
	m, err := mcpserver.ParseMode(mode)
	if err != nil {
		t.Fatal(err)
	}
	fs.mode.Store(&m)
}

func (fs *faultServer) requests() []*http.Request {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]*http.Request(nil), fs.seen...)
}

func TestHTTPStatuses(t *testing.T) {
	tests := []struct {
		mode       string
		json       bool
		timeout    time.Duration
		want       Verdict
		status     int
		retryAfter time.Duration
		reason     []string
	}{
		{mode: "healthy", want: Healthy, status: 200, reason: []string{"answered initialize as " + mcpserver.ServerName}},
		{mode: "healthy", json: true, want: Healthy, status: 200},
		{mode: "401", want: AuthRequired, status: 401, reason: []string{"HTTP 401 Unauthorized (WWW-Authenticate present)"}},
		{mode: "403", want: AuthRequired, status: 403, reason: []string{"HTTP 403 Forbidden (no WWW-Authenticate)"}},
		{mode: "429", want: RateLimited, status: 429, retryAfter: 7 * time.Second, reason: []string{"HTTP 429", "Retry-After 7s"}},
		{mode: "429=120", want: RateLimited, status: 429, retryAfter: 120 * time.Second},
		{mode: "500", want: Unavailable, status: 500, reason: []string{"HTTP 500 Internal Server Error", "Internal Server Error"}},
		{mode: "502", want: Unavailable, status: 502},
		{mode: "503,rpc-body", want: Unavailable, status: 503, reason: []string{"HTTP 503 Service Unavailable: JSON-RPC error -32000"}},
		{mode: "504", want: Unavailable, status: 504},
		{mode: "404", want: NotMCP, status: 404, reason: []string{"no MCP endpoint at http://127.0.0.1:", "(wrong URL or transport?)"}},
		{mode: "405", want: NotMCP, status: 405},
		{mode: "406", want: NotMCP, status: 406, reason: []string{"HTTP 406 Not Acceptable without a JSON-RPC answer"}},
		{mode: "406,rpc-body", want: Healthy, status: 406, reason: []string{"JSON-RPC error -32000"}},
		{mode: "400,rpc-body", want: Healthy, status: 400},
		{mode: "415", want: NotMCP, status: 415},
		{mode: "302", want: NotMCP, status: 302, reason: []string{"redirect not followed", "Location: http://nightwatch.invalid/…"}},
		{mode: "202", want: NotMCP, status: 202, reason: []string{"HTTP 202 answered initialize with text/plain, not JSON-RPC"}},
		{mode: "html", want: NotMCP, status: 200, reason: []string{"text/html, not JSON-RPC"}},
		{mode: "hang", timeout: time.Second, want: Transport, reason: []string{"no answer to initialize within 1s"}},
		{mode: "discover-only", want: Healthy, status: 200, reason: []string{"JSON-RPC error -32601"}},
	}
	for _, tt := range tests {
		name := tt.mode
		if tt.json {
			name += " json"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fs := newFaultServer(t, tt.mode, mcpserver.HTTPOptions{JSONResponse: tt.json})
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			srv := &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: fs.URL + mcpserver.StreamablePath}
			start := time.Now()
			res := HTTP(context.Background(), srv, Options{Timeout: timeout})
			requireNotHung(t, start, timeout)
			t.Logf("%+v", res)
			if res.Verdict != tt.want || res.Status != tt.status {
				t.Fatalf("got %s %d (%q), want %s %d", res.Verdict, res.Status, res.Reason, tt.want, tt.status)
			}
			if res.RetryAfter != tt.retryAfter {
				t.Errorf("retry after %s, want %s", res.RetryAfter, tt.retryAfter)
			}
			for _, part := range tt.reason {
				if !strings.Contains(res.Reason, part) {
					t.Errorf("reason %q lacks %q", res.Reason, part)
				}
			}
			if res.Tools != -1 {
				t.Errorf("tools %d without ListTools", res.Tools)
			}
		})
	}
}

// The era as the probe finds it over HTTP: a stateless go-sdk server speaks
// 2026-07-28 (and rejects a request without Mcp-Method), a stateful one
// lists only legacy versions in server/discover, a 2025 server refuses
// discover, a silent one costs the discover wait, not the timeout.
func TestHTTPEras(t *testing.T) {
	tests := []struct {
		name      string
		mode      string
		stateless bool
		era       Era
		version   string
		reason    string
		minTime   time.Duration // the delay the server itself imposes: a lower bound no machine breaks
	}{
		{name: "stateless go-sdk is modern", mode: "healthy", stateless: true, era: Modern, version: ModernProtocolVersion,
			reason: "answered server/discover as " + mcpserver.ServerName},
		{name: "stateful go-sdk is legacy", mode: "healthy", era: Legacy, version: ClientProtocolVersion,
			reason: "server/discover lists no version the probe speaks as modern"},
		{name: "2025 server refuses discover with 400", mode: "legacy", era: Legacy, version: ClientProtocolVersion,
			reason: "legacy: server/discover got JSON-RPC error -32601"},
		{name: "server ignores discover", mode: "ignore-discover", era: Legacy, version: ClientProtocolVersion,
			// Healthy after the 1 s discover wait the reason names, not cut
			// by the 5 s timeout (which would have ended the probe).
			reason: "server/discover unanswered within 1s"},
		{name: "slow handshake", mode: "slow-handshake=300ms", stateless: true, era: Modern, version: ModernProtocolVersion,
			minTime: 300 * time.Millisecond},
		{name: "server down on discover, 503 everywhere", mode: "503", era: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := newFaultServer(t, tt.mode, mcpserver.HTTPOptions{Stateless: tt.stateless})
			res := HTTP(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: fs.URL + mcpserver.StreamablePath},
				Options{Timeout: 5 * time.Second, ListTools: true})
			t.Logf("%+v", res)
			if tt.era == "" {
				if res.Verdict != Unavailable || res.Era != "" {
					t.Fatalf("got %+v, want unavailable", res)
				}
				// Both handshake POSTs are judged; no DELETE without a session.
				if n := len(fs.requests()); n != 2 {
					t.Errorf("%d requests, want discover and initialize", n)
				}
				return
			}
			if res.Verdict != Healthy || res.Era != tt.era || res.ProtocolVersion != tt.version || res.Tools != len(mcpserver.ToolNames) {
				t.Fatalf("got %+v, want healthy %s %s with every tool", res, tt.era, tt.version)
			}
			if !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("reason %q lacks %q", res.Reason, tt.reason)
			}
			if res.Latency < tt.minTime {
				t.Errorf("latency %s, want at least %s", res.Latency, tt.minTime)
			}
			if tt.era != Modern {
				return
			}
			// Modern: discover and tools/list, each with the 2026-07-28
			// headers, no session and no initialize.
			var methods []string
			for _, r := range fs.requests() {
				methods = append(methods, r.Method+" "+r.Header.Get("Mcp-Method"))
				if r.Header.Get("MCP-Protocol-Version") != ModernProtocolVersion || r.Header.Get("Mcp-Session-Id") != "" {
					t.Errorf("%s %s: headers %v", r.Method, r.Header.Get("Mcp-Method"), r.Header)
				}
			}
			if got := strings.Join(methods, ", "); got != "POST server/discover, POST tools/list" {
				t.Errorf("requests %q", got)
			}
		})
	}
}

func TestHTTPRetryAfterDate(t *testing.T) {
	fs := newFaultServer(t, "429=date+120", mcpserver.HTTPOptions{})
	// The date is 120 s (in whole seconds) after the server's answer; the
	// probe reads it some time later. However long the call took on this
	// machine, the wait it reads lies within the call's span of 120 s.
	before := time.Now()
	res := HTTP(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: fs.URL + "/mcp"}, Options{})
	span := time.Since(before)
	if low := 118*time.Second - span; res.Verdict != RateLimited || res.RetryAfter < low || res.RetryAfter > 121*time.Second {
		t.Errorf("got %s retry after %s, want rate-limited, %s to 121s", res.Verdict, res.RetryAfter, low.Round(time.Second))
	}
}

// A healthy probe lists the tools over the session, sends the session
// headers on follow-ups, and DELETEs the session at the end.
func TestHTTPSession(t *testing.T) {
	for _, jsonResponse := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", jsonResponse), func(t *testing.T) {
			t.Parallel()
			fs := newFaultServer(t, "healthy", mcpserver.HTTPOptions{JSONResponse: jsonResponse})
			srv := &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: fs.URL + "/mcp",
				Headers: map[string]string{"Authorization": "Bearer tok-abc-123", "X-Team": "night"}}
			res := HTTP(context.Background(), srv, Options{Timeout: 5 * time.Second, ListTools: true})
			if res.Verdict != Healthy || res.Tools != len(mcpserver.ToolNames) || res.ProtocolVersion != ClientProtocolVersion {
				t.Fatalf("got %+v", res)
			}
			reqs := fs.requests()
			var methods []string
			for _, r := range reqs {
				methods = append(methods, r.Method)
				if r.Header.Get("Authorization") != "Bearer tok-abc-123" || r.Header.Get("X-Team") != "night" {
					t.Errorf("%s without the configured headers: %v", r.Method, r.Header)
				}
				if !strings.HasPrefix(r.Header.Get("User-Agent"), "nightwatch/") {
					t.Errorf("User-Agent %q", r.Header.Get("User-Agent"))
				}
			}
			// server/discover (a stateful go-sdk handler lists only legacy
			// versions there), initialize, notifications/initialized,
			// tools/list, DELETE
			if got := strings.Join(methods, " "); got != "POST POST POST POST DELETE" {
				t.Fatalf("requests %q", got)
			}
			if res.Era != Legacy || !slices.Contains(res.SupportedVersions, ClientProtocolVersion) {
				t.Errorf("era %q supported %q, want legacy with %s", res.Era, res.SupportedVersions, ClientProtocolVersion)
			}
			discover := reqs[0]
			if discover.Header.Get("MCP-Protocol-Version") != ModernProtocolVersion || discover.Header.Get("Mcp-Method") != "server/discover" {
				t.Errorf("discover headers %v", discover.Header)
			}
			session := reqs[4].Header.Get("Mcp-Session-Id")
			if session == "" {
				t.Error("DELETE without Mcp-Session-Id")
			}
			for _, r := range reqs[2:] {
				if r.Header.Get("Mcp-Session-Id") != session {
					t.Errorf("%s with session %q, want %q", r.Method, r.Header.Get("Mcp-Session-Id"), session)
				}
				if r.Header.Get("MCP-Protocol-Version") != ClientProtocolVersion {
					t.Errorf("%s with MCP-Protocol-Version %q", r.Method, r.Header.Get("MCP-Protocol-Version"))
				}
				if r.Header.Get("Mcp-Method") != "" {
					t.Errorf("legacy %s with Mcp-Method %q", r.Method, r.Header.Get("Mcp-Method"))
				}
			}
			for _, r := range reqs[:2] {
				if r.Header.Get("Mcp-Session-Id") != "" {
					t.Error("discover or initialize sent a session id")
				}
			}
			if v := reqs[1].Header.Get("MCP-Protocol-Version"); v != "" {
				t.Errorf("initialize with MCP-Protocol-Version %q", v)
			}
			if accept := reqs[0].Header.Get("Accept"); accept != "application/json, text/event-stream" {
				t.Errorf("Accept %q", accept)
			}
		})
	}
}

func TestHTTPRequiredHeader(t *testing.T) {
	const secret = "s3cret-api-key-value"
	fs := newFaultServer(t, "require-header=X-Api-Key:"+secret, mcpserver.HTTPOptions{})
	tests := []struct {
		name    string
		headers map[string]string
		want    Verdict
	}{
		{"configured header reaches the server", map[string]string{"X-Api-Key": secret}, Healthy},
		{"wrong value", map[string]string{"X-Api-Key": "wrong-key-value"}, AuthRequired},
		{"no header", nil, AuthRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: fs.URL + "/mcp", Headers: tt.headers}
			res := HTTP(context.Background(), srv, Options{Timeout: 5 * time.Second})
			if res.Verdict != tt.want {
				t.Errorf("verdict %s (%q), want %s", res.Verdict, res.Reason, tt.want)
			}
			assertNoSecret(t, res.Reason, secret, "wrong-key-value")
		})
	}
}

// Servers that echo what they were sent must not leak the headers into
// the reason; neither may a token in the URL's query.
func TestHTTPReasonHidesSecrets(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad upstream, got auth "+r.Header.Get("Authorization")+" token="+r.URL.Query().Get("token"),
			http.StatusBadGateway)
	}))
	defer echo.Close()
	srv := &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: echo.URL + "/mcp?token=url-secret-123",
		Headers: map[string]string{"Authorization": "Bearer header-secret-456"}}
	res := HTTP(context.Background(), srv, Options{Timeout: 5 * time.Second})
	if res.Verdict != Unavailable || !strings.Contains(res.Reason, "bad upstream") {
		t.Fatalf("got %s %q", res.Verdict, res.Reason)
	}
	assertNoSecret(t, res.Reason, "header-secret-456", "url-secret-123")

	notFound := &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: echo.URL + "/x?token=url-secret-123"}
	echo.Config.Handler = http.NotFoundHandler()
	res = HTTP(context.Background(), notFound, Options{Timeout: 5 * time.Second})
	if res.Verdict != NotMCP {
		t.Fatalf("got %s %q", res.Verdict, res.Reason)
	}
	assertNoSecret(t, res.Reason, "url-secret-123")
}

func TestHTTPRedirects(t *testing.T) {
	fs := newFaultServer(t, "healthy", mcpserver.HTTPOptions{})
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fs.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer other.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", fs.Config.Handler)
	mux.Handle("/old", http.RedirectHandler("/mcp", http.StatusPermanentRedirect))
	mux.Handle("/moved", http.RedirectHandler("/mcp", http.StatusMovedPermanently))
	same := httptest.NewServer(mux)
	defer same.Close()

	tests := []struct {
		url    string
		want   Verdict
		status int
	}{
		{same.URL + "/old", Healthy, 200},  // 308, same host: followed
		{same.URL + "/moved", NotMCP, 301}, // a POST must not turn into a GET
		{other.URL + "/mcp", NotMCP, 307},  // another host: headers stay home
	}
	for _, tt := range tests {
		srv := &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: tt.url, Headers: map[string]string{"Authorization": "Bearer x-token-1"}}
		res := HTTP(context.Background(), srv, Options{Timeout: 5 * time.Second, ListTools: true})
		if res.Verdict != tt.want || res.Status != tt.status {
			t.Errorf("%s: got %s %d (%q), want %s %d", tt.url, res.Verdict, res.Status, res.Reason, tt.want, tt.status)
		}
		if tt.want == Healthy && res.Tools != len(mcpserver.ToolNames) {
			t.Errorf("%s: tools %d after the redirect", tt.url, res.Tools)
		}
	}
}

func TestHTTPConnectionFailures(t *testing.T) {
	refused := closedPortURL(t)
	tests := []struct {
		name    string
		url     string
		reason  string
		refused bool
	}{
		{"connection refused", refused + "/mcp", "connection refused", true},
		{"DNS failure", "http://nightwatch-no-such-host.invalid/mcp", "POST http://nightwatch-no-such-host.invalid/mcp", false},
		{"not a URL", "ftp://example.com/mcp", "invalid URL", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			res := HTTP(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: tt.url}, Options{Timeout: 2 * time.Second})
			requireNotHung(t, start, 2*time.Second)
			if res.Verdict != Transport || !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("got %s %q, want transport with %q", res.Verdict, res.Reason, tt.reason)
			}
			if res.Refused != tt.refused {
				t.Errorf("Refused = %v, want %v (only a refused connection says nothing listened)", res.Refused, tt.refused)
			}
		})
	}
}

// A tools/list failure after a good initialize keeps the server healthy
// and says why the tools are unknown.
func TestHTTPToolsListFailure(t *testing.T) {
	fs := newFaultServer(t, "healthy", mcpserver.HTTPOptions{})
	var posts atomic.Int32
	failThird := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && posts.Add(1) == 4 { // discover, initialize, initialized, tools/list
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		fs.Config.Handler.ServeHTTP(w, r)
	})
	front := httptest.NewServer(failThird)
	defer front.Close()
	res := HTTP(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: front.URL + "/mcp"},
		Options{Timeout: 5 * time.Second, ListTools: true})
	if res.Verdict != Healthy || res.Tools != -1 || !strings.Contains(res.Reason, "tools/list failed: HTTP 503") {
		t.Errorf("got %+v", res)
	}
}

// The nwtestserver binary over HTTP, with its mode switched through the
// control file while it runs.
func TestHTTPTestServerBinary(t *testing.T) {
	bin := testkit.BuildTestServer(t)
	control := filepath.Join(t.TempDir(), "mode")
	url := startURLServer(t, exec.Command(bin, "--http", "127.0.0.1:0", "--control", control))
	srv := &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: url}
	for _, step := range []struct {
		mode string
		want Verdict
	}{{"", Healthy}, {"503", Unavailable}, {"401", AuthRequired}, {"healthy", Healthy}} {
		if err := os.WriteFile(control, []byte(step.mode), 0o644); err != nil {
			t.Fatal(err)
		}
		res := HTTP(context.Background(), srv, Options{Timeout: 5 * time.Second, ListTools: true})
		if res.Verdict != step.want {
			t.Errorf("mode %q: got %s (%q), want %s", step.mode, res.Verdict, res.Reason, step.want)
		}
	}
}

// startURLServer starts an HTTP server process in its own process group,
// killed with the group at the end of the test, and returns the URL it
// prints as its first stdout line.
func startURLServer(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	proc.Prepare(cmd, 200*time.Millisecond)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = proc.Wait(cmd)
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		for sc.Scan() { // keep draining so the server never blocks on stdout
		}
	}()
	select {
	case url, ok := <-line:
		if !ok {
			t.Fatal("server printed no URL")
		}
		return url
	case <-time.After(10 * time.Second):
		t.Fatal("server printed no URL within 10s")
	}
	return ""
}

// closedPortURL returns a loopback URL nothing listens on.
func closedPortURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 8, 22, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		value string
		want  time.Duration
	}{
		{"", 0},
		{"30", 30 * time.Second},
		{" 5 ", 5 * time.Second},
		{"0", 0},
		{"-3", 0},
		{"soon", 0},
		{"99999999999999999", maxRetryAfter},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"Sunday, 22-Aug-26 02:02:00 GMT", 2 * time.Minute}, // RFC 850
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.value, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tt.value, got, tt.want)
		}
	}
}

// Which answers to server/discover are the verdict and which send the probe
// on to initialize: the fallback is not keyed to one code, but a status that
// speaks for the whole endpoint (auth, rate limit, a redirect, no answer)
// would only be heard again.
func TestHTTPDiscoverFallback(t *testing.T) {
	tests := []struct {
		mode  string
		want  Verdict
		posts int
	}{
		{"401", AuthRequired, 1},
		{"403", AuthRequired, 1},
		{"429", RateLimited, 1},
		{"302", NotMCP, 1},
		{"503", Unavailable, 2},
		{"500,rpc-body", Unavailable, 2},
		{"404", NotMCP, 2},
		{"406", NotMCP, 2},
		{"html", NotMCP, 2},
		{"legacy", Healthy, 2},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			fs := newFaultServer(t, tt.mode, mcpserver.HTTPOptions{})
			res := HTTP(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: fs.URL + mcpserver.StreamablePath},
				Options{Timeout: 5 * time.Second})
			posts := 0
			for _, r := range fs.requests() {
				if r.Method == http.MethodPost {
					posts++
				}
			}
			if res.Verdict != tt.want || posts != tt.posts {
				t.Errorf("got %s after %d POSTs (%q), want %s after %d", res.Verdict, posts, res.Reason, tt.want, tt.posts)
			}
		})
	}
}

// A secret-URL service (/api/mcp/s/<secret>/mcp, query token): whatever
// the probe reports of it (a 404, a refused connection) shows the URL as
// scheme, host and port only, even where nobody told the redactor the URL.
func TestHTTPSecretURLPathNeverInTheReason(t *testing.T) {
	const secret = "pathsecretT5y8U1i4O7p0"
	ts := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(ts.Close)
	dead := "http://" + freeAddr(t)
	for _, base := range []string{ts.URL, dead} {
		srv := &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: base + "/api/mcp/s/" + secret + "/mcp?token=querysecret9876"}
		res := HTTP(context.Background(), srv, Options{Timeout: 3 * time.Second})
		if res.Verdict == Healthy || strings.Contains(res.Reason, secret) || strings.Contains(res.Reason, "querysecret9876") {
			t.Errorf("%s: verdict %s, reason %q holds the URL's secret", base, res.Verdict, res.Reason)
		}
		if !strings.Contains(res.Reason, base+"/…") {
			t.Errorf("%s: reason %q does not say where (scheme://host:port/…)", base, res.Reason)
		}
	}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
