package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Restartable is a Streamable HTTP MCP server on a fixed port that a test
// takes down and starts again on the same port, each time as a new server
// that knows none of the old MCP sessions, as a restarted process would.
type Restartable struct {
	t    testing.TB
	addr string

	mu  sync.Mutex
	srv *http.Server
	// downAfter, when > 0, takes the server down once it has answered
	// that many tools/call requests.
	downAfter int
	calls     int
	starts    int
	requests  []Request
}

// Request is one HTTP request a Restartable answered: which start of the
// server answered it, its JSON-RPC method ("" for none: a GET, a DELETE),
// the Mcp-Session-Id it carried and the HTTP status of the answer.
type Request struct {
	Start   int
	Method  string
	Session string
	Status  int
}

// Requests is every request answered so far, in order.
func (r *Restartable) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// statusRecorder keeps the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// StartRestartable serves on 127.0.0.1 (a free port); downAfter > 0 takes
// it down after it answered that many tools/call requests: its listener
// closes before the answer leaves, so the next connection is refused, and
// its open connections close once the answer is out. It is closed in
// t.Cleanup.
func StartRestartable(t testing.TB, downAfter int) *Restartable {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Restartable{t: t, addr: ln.Addr().String(), downAfter: downAfter}
	r.serve(ln)
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.srv != nil {
			_ = r.srv.Close()
		}
	})
	return r
}

// URL is the server's Streamable HTTP endpoint.
func (r *Restartable) URL() string { return "http://" + r.addr + StreamablePath }

// Starts is how many times the server was started.
func (r *Restartable) Starts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts
}

func (r *Restartable) serve(ln net.Listener) {
	r.mu.Lock()
	start := r.starts + 1 // this start's number
	r.mu.Unlock()
	inner := NewHTTPHandler(HTTPOptions{})
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body []byte
		if req.Body != nil {
			body, _ = io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		var msg struct{ Method string }
		_ = json.Unmarshal(body, &msg)
		rec := &statusRecorder{ResponseWriter: w}
		inner.ServeHTTP(rec, req)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		r.mu.Lock()
		r.requests = append(r.requests, Request{Start: start, Method: msg.Method, Session: req.Header.Get("Mcp-Session-Id"), Status: rec.status})
		r.mu.Unlock()
		w = rec
		if msg.Method != "tools/call" {
			return
		}
		r.mu.Lock()
		r.calls++
		down := r.downAfter > 0 && r.calls == r.downAfter && r.srv == srv
		if down {
			r.srv = nil
		}
		r.mu.Unlock()
		if down {
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			_ = ln.Close()
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(ctx)
			}()
		}
	})
	r.mu.Lock()
	r.srv = srv
	r.starts++
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// Start brings the server back on the same port.
func (r *Restartable) Start() {
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if ln, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			r.t.Errorf("cannot listen on %s again: %v", r.addr, err)
			return
		}
	}
	r.serve(ln)
}
