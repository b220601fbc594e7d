package probe

import (
	"context"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// headerRecorder is a server on another loopback port that notes which
// configured credentials reached it.
type headerRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newHeaderRecorder(t *testing.T) *headerRecorder {
	t.Helper()
	hr := &headerRecorder{}
	hr.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hr.mu.Lock()
		hr.seen = append(hr.seen, r.Method+" X-Api-Key="+r.Header.Get("X-Api-Key")+" Authorization="+r.Header.Get("Authorization"))
		hr.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(hr.Close)
	return hr
}

func (hr *headerRecorder) requests() []string {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	return append([]string(nil), hr.seen...)
}

func TestWake(t *testing.T) {
	headers := map[string]string{"X-Api-Key": "wake-key-1", "Authorization": "Bearer wake-tok-1"}
	fast := WakeOptions{WaitMin: 10 * time.Millisecond, WaitMax: 50 * time.Millisecond}

	t.Run("cold endpoint wakes after retries", func(t *testing.T) {
		var calls atomic.Int32
		fs := newFaultServer(t, "healthy", mcpserver.HTTPOptions{})
		cold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) <= 2 {
				http.Error(w, "starting", http.StatusServiceUnavailable)
				return
			}
			fs.Config.Handler.ServeHTTP(w, r)
		}))
		defer cold.Close()
		w := Wake(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: cold.URL + "/mcp", Headers: headers}, 5*time.Second, fast)
		if !w.Awake || w.Attempts != 3 || w.Status != http.StatusOK {
			t.Errorf("got %+v, want awake after 3 attempts", w)
		}
		// What reached the server is server/discover with its headers.
		reqs := fs.requests()
		if len(reqs) == 0 || reqs[0].Header.Get("Mcp-Method") != "server/discover" || reqs[0].Header.Get("X-Api-Key") != "wake-key-1" {
			t.Errorf("requests %v", reqs)
		}
	})
	t.Run("Retry-After beyond the budget is not waited for", func(t *testing.T) {
		fs := newFaultServer(t, "429=30", mcpserver.HTTPOptions{})
		// Given up on the answer, not waited on: a wake-up that waited
		// would be cut by the budget (no status) or send a second request.
		w := Wake(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: fs.URL + "/mcp"}, 2*time.Second, fast)
		if w.Awake || w.Attempts != 1 || w.Status != http.StatusTooManyRequests {
			t.Errorf("got %+v, want one attempt that kept the 429, not awake", w)
		}
	})
	t.Run("Retry-After within the budget is honoured", func(t *testing.T) {
		var calls atomic.Int32
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				http.Error(w, "later", http.StatusTooManyRequests)
				return
			}
			http.Error(w, "bad request", http.StatusBadRequest)
		}))
		defer ts.Close()
		// The backoff alone (fast: at most 50 ms) would retry sooner than
		// the server's 1 s. The wait is a lower bound the server sets,
		// which no machine is too slow for.
		start := time.Now()
		w := Wake(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: ts.URL + "/mcp"}, 5*time.Second, fast)
		if !w.Awake || w.Attempts != 2 || time.Since(start) < 900*time.Millisecond {
			t.Errorf("got %+v after %s, want awake on the 2nd attempt, 1 s later", w, time.Since(start))
		}
	})
	t.Run("redirect to another host: headers stay home", func(t *testing.T) {
		other := newHeaderRecorder(t)
		redirect := httptest.NewServer(http.RedirectHandler(other.URL+"/mcp", http.StatusTemporaryRedirect))
		defer redirect.Close()
		w := Wake(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: redirect.URL + "/mcp", Headers: headers}, 2*time.Second, fast)
		if got := other.requests(); len(got) > 0 {
			t.Errorf("the wake-up followed the redirect to another host: %q", got)
		}
		if w.Status != http.StatusTemporaryRedirect {
			t.Errorf("got %+v, want the 307 itself", w)
		}
	})
	t.Run("redirect from https to http is not followed", func(t *testing.T) {
		plain := newHeaderRecorder(t)
		secure := httptest.NewTLSServer(http.RedirectHandler(plain.URL+"/mcp", http.StatusPermanentRedirect))
		defer secure.Close()
		roots := x509.NewCertPool()
		roots.AddCert(secure.Certificate())
		opts := fast
		opts.rootCAs = roots
		w := Wake(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: secure.URL + "/mcp", Headers: headers}, 2*time.Second, opts)
		if got := plain.requests(); len(got) > 0 {
			t.Errorf("the wake-up went from https to plain http: %q", got)
		}
		if w.Status != http.StatusPermanentRedirect || w.Attempts != 1 {
			t.Errorf("got %+v, want the 308 itself after one attempt", w)
		}
	})
	t.Run("307 on the same host is followed", func(t *testing.T) {
		fs := newFaultServer(t, "healthy", mcpserver.HTTPOptions{})
		mux := http.NewServeMux()
		mux.Handle("/mcp", fs.Config.Handler)
		mux.Handle("/old", http.RedirectHandler("/mcp", http.StatusTemporaryRedirect))
		same := httptest.NewServer(mux)
		defer same.Close()
		w := Wake(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: same.URL + "/old", Headers: headers}, 2*time.Second, fast)
		if !w.Awake || w.Status != http.StatusOK {
			t.Errorf("got %+v", w)
		}
	})
	t.Run("SSE opens the stream", func(t *testing.T) {
		fs := newFaultServer(t, "healthy", mcpserver.HTTPOptions{SSE: true})
		w := Wake(context.Background(), &mcpconfig.Server{Transport: mcpconfig.SSE, URL: fs.URL + mcpserver.SSEPath}, 2*time.Second, fast)
		if !w.Awake || w.Status != http.StatusOK {
			t.Errorf("got %+v", w)
		}
		if reqs := fs.requests(); len(reqs) != 1 || reqs[0].Method != http.MethodGet {
			t.Errorf("requests %v", reqs)
		}
	})
	t.Run("refused until the budget ends", func(t *testing.T) {
		// More retries than 50 ms waits can fit in the budget: the budget,
		// not the retry count, must end it (it returning at all is the
		// rest; how soon after the budget is the machine's).
		opts := fast
		opts.Retries = 1000
		w := Wake(context.Background(), &mcpconfig.Server{Transport: mcpconfig.HTTP, URL: closedPortURL(t) + "/mcp"}, 500*time.Millisecond, opts)
		if w.Awake || w.Status != 0 || w.Attempts < 2 || w.Attempts > opts.Retries {
			t.Errorf("got %+v, want retries until the budget ended them", w)
		}
	})
	t.Run("stdio needs no wake-up", func(t *testing.T) {
		if w := Wake(context.Background(), &mcpconfig.Server{Transport: mcpconfig.Stdio, Command: "true"}, time.Second, fast); w != (WakeResult{}) {
			t.Errorf("got %+v", w)
		}
	})
}
