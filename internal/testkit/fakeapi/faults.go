package fakeapi

// Failure modes of the fake Messages API. By default the fake answers every
// request (see fakeapi.go); Inject makes it fail instead, for a window (a
// number of requests, a duration, or both: whichever ends first) or for good
// (until Clear):
//
//   - Refused: nothing listens on the port (ECONNREFUSED); when the window
//     ends the fake listens again on the same port, so ANTHROPIC_BASE_URL
//     stays valid;
//   - ServerError(500|502|503), Overloaded (529): the error bodies the real
//     API sends;
//   - InvalidAPIKey (401 authentication_error);
//   - UsageLimit: a subscriber's plan limit (429 with the
//     anthropic-ratelimit-unified-* headers the CLI turns into "You've hit
//     your … limit · resets …");
//   - AccountRateLimit: an API key's account rate limit (429
//     rate_limit_error);
//   - PromptTooLong: the context is too long (400 invalid_request_error
//     "prompt is too long: …").
//
// A max-turns ending needs no fault: run the CLI with --max-turns 1 and a
// script with a CALL line.
//
// Faults apply to POST /v1/messages only (main and side requests alike);
// count_tokens and other paths keep answering normally.

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Fault is one failure the fake answers with. Build it with a constructor
// (Overloaded, UsageLimit, …) and set the window fields if it should end by
// itself.
type Fault struct {
	// Name says what the fault is, for logs ("refused", "529 overloaded_error").
	Name string
	// Refuse makes the fake stop listening: connections are refused.
	Refuse bool
	// Status, Header and Body are the HTTP answer (unless Refuse).
	Status int
	Header http.Header
	Body   []byte

	// Requests ends the fault after it answered this many requests (0: no
	// count limit). Not with Refuse: a refused connection is no request.
	Requests int
	// For ends the fault this long after Inject (0: no time limit), or,
	// with ForFromFirst, this long after the first request it answered:
	// a window that does not depend on how fast a busy machine starts
	// the session that meets it.
	For          time.Duration
	ForFromFirst bool

	// EdgeAuth answers, while the fault lasts, a request that carries no
	// credentials (no x-api-key, no Authorization) with 401 before the
	// fault, as an edge that authenticates before it schedules does: an
	// unauthenticated check of the API passes while every real request
	// meets the fault. Such a request is not counted against the fault.
	EdgeAuth bool

	// headerAt, when set, builds Header when the fault answers (a reset
	// time relative to the answer).
	headerAt func(now time.Time) http.Header
}

// apiError is the body of every error of the real Messages API.
func apiError(errType, message string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "error",
		"error": map[string]any{"type": errType, "message": message}})
	return b
}

// Refused is a fault in which nothing listens on the fake's port.
func Refused() Fault { return Fault{Name: "connection refused", Refuse: true} }

// ServerError is a 500, 502 or 503 answer with the real API's api_error body.
func ServerError(status int) Fault {
	msg := map[int]string{500: "Internal server error", 502: "Bad gateway",
		503: "Service unavailable"}[status]
	if msg == "" {
		msg = http.StatusText(status)
	}
	return Fault{Name: fmt.Sprintf("%d api_error", status), Status: status, Body: apiError("api_error", msg)}
}

// Overloaded is the real API's 529 overloaded_error.
func Overloaded() Fault {
	return Fault{Name: "529 overloaded_error", Status: 529, Body: apiError("overloaded_error", "Overloaded")}
}

// InvalidAPIKey is the real API's answer to a wrong x-api-key.
func InvalidAPIKey() Fault {
	return Fault{Name: "401 authentication_error", Status: http.StatusUnauthorized,
		Body: apiError("authentication_error", "invalid x-api-key")}
}

// AccountRateLimitMessage is the real API's message for an API key's
// account rate limit.
const AccountRateLimitMessage = "This request would exceed your account's rate limit. Please try again later."

// AccountRateLimit is the 429 an API key gets at its account's rate limit
// (no anthropic-ratelimit-unified-* headers: those are a subscriber's).
func AccountRateLimit() Fault {
	h := http.Header{}
	h.Set("retry-after", "1")
	return Fault{Name: "429 account rate limit", Status: http.StatusTooManyRequests, Header: h,
		Body: apiError("rate_limit_error", AccountRateLimitMessage)}
}

// Usage-limit claims: which window of a subscriber's plan is exhausted
// (anthropic-ratelimit-unified-representative-claim).
const (
	FiveHour = "five_hour" // the 5-hour (session) limit
	SevenDay = "seven_day" // the weekly limit
)

// UsageLimit is the 429 a subscriber's plan limit answers with: the
// unified rate-limit headers say the request is rejected, which window
// (claim: FiveHour, SevenDay) and when it resets (unix seconds), the
// window's own -5h-/-7d- headers agree. The CLI builds its "You've hit your
// … limit · resets …" text from these headers, not from the body.
func UsageLimit(claim string, reset time.Time) Fault {
	return Fault{Name: "429 usage limit " + claim, Status: http.StatusTooManyRequests, Header: usageHeader(claim, reset),
		Body: apiError("rate_limit_error", "Rate limit exceeded")}
}

// UsageLimitIn is UsageLimit with a reset time `in` after each answer, so
// the reset is ahead whenever the session meets it.
func UsageLimitIn(claim string, in time.Duration) Fault {
	f := UsageLimit(claim, time.Now().Add(in))
	f.headerAt = func(now time.Time) http.Header { return usageHeader(claim, now.Add(in)) }
	return f
}

func usageHeader(claim string, reset time.Time) http.Header {
	win := map[string]string{FiveHour: "5h", SevenDay: "7d"}[claim]
	h := http.Header{}
	r := strconv.FormatInt(reset.Unix(), 10)
	h.Set("anthropic-ratelimit-unified-status", "rejected")
	h.Set("anthropic-ratelimit-unified-reset", r)
	h.Set("anthropic-ratelimit-unified-representative-claim", claim)
	h.Set("anthropic-ratelimit-unified-fallback", "unavailable")
	h.Set("anthropic-ratelimit-unified-overage-status", "rejected")
	h.Set("anthropic-ratelimit-unified-overage-disabled-reason", "org_level_disabled")
	if win != "" {
		h.Set("anthropic-ratelimit-unified-"+win+"-status", "rejected")
		h.Set("anthropic-ratelimit-unified-"+win+"-reset", r)
		h.Set("anthropic-ratelimit-unified-"+win+"-utilization", "1.0")
	}
	return h
}

// PromptTooLongMessage is the real API's message for a context over the
// model's window.
const PromptTooLongMessage = "prompt is too long: 210000 tokens > 200000 maximum"

// PromptTooLong is the real API's 400 for a conversation over the context
// window.
func PromptTooLong() Fault {
	return Fault{Name: "400 prompt is too long", Status: http.StatusBadRequest,
		Body: apiError("invalid_request_error", PromptTooLongMessage)}
}

// activeFault is an injected fault with its window's state.
type activeFault struct {
	Fault
	answered int
	timer    *time.Timer
}

// Inject makes the fake answer with f from now on, until f's window ends or
// Clear is called; it replaces any fault injected before.
func (s *Server) Inject(f Fault) {
	if f.Refuse && f.Requests > 0 {
		s.t.Errorf("fakeapi: a Refused fault cannot end after %d requests: none arrive", f.Requests)
		f.Requests = 0
	}
	s.fmu.Lock()
	if s.closed {
		s.fmu.Unlock()
		return
	}
	wasRefusing := s.stopFaultLocked()
	af := &activeFault{Fault: f}
	s.fault = af
	if f.For > 0 && !f.ForFromFirst {
		af.timer = time.AfterFunc(f.For, func() { s.endFault(af) })
	}
	s.fmu.Unlock()
	switch {
	case f.Refuse && !wasRefusing:
		s.ln.refuse()
	case !f.Refuse && wasRefusing:
		if err := s.ln.resume(); err != nil {
			s.t.Errorf("fakeapi: listen again on %s: %v", s.ln.addr, err)
		}
	}
	s.t.Logf("fakeapi: injected fault %s (requests %d, for %s)", f.Name, f.Requests, f.For)
}

// Clear ends any injected fault: the fake answers normally again (and
// listens again on its port if it was refusing).
func (s *Server) Clear() {
	s.fmu.Lock()
	af := s.fault
	s.fmu.Unlock()
	if af != nil {
		s.endFault(af)
	}
}

// Faulted is the number of requests answered by faults so far.
func (s *Server) Faulted() int {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	return s.faulted
}

// Faulting reports whether a fault is in force.
func (s *Server) Faulting() bool {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	return s.fault != nil
}

// endFault ends af if it is still the injected fault.
func (s *Server) endFault(af *activeFault) {
	s.fmu.Lock()
	if s.fault != af || s.closed {
		s.fmu.Unlock()
		return
	}
	s.stopFaultLocked()
	s.fmu.Unlock()
	if af.Refuse {
		if err := s.ln.resume(); err != nil {
			s.t.Errorf("fakeapi: listen again on %s: %v", s.ln.addr, err)
		}
	}
	s.t.Logf("fakeapi: fault %s ended", af.Name)
}

// stopFaultLocked drops the injected fault and says whether it was a
// refusal (the caller must then listen again, outside s.fmu).
func (s *Server) stopFaultLocked() (wasRefusing bool) {
	if s.fault == nil {
		return false
	}
	if s.fault.timer != nil {
		s.fault.timer.Stop()
	}
	wasRefusing = s.fault.Refuse
	s.fault = nil
	return wasRefusing
}

// serve answers a request with the injected fault, if one applies, and
// otherwise normally.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/messages" {
		if s.edgeAuth() && r.Header.Get("x-api-key") == "" && r.Header.Get("Authorization") == "" {
			s.note(Request{Method: r.Method, Path: r.URL.Path, Answer: "edge 401"}, "")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write(apiError("authentication_error", "x-api-key header is required"))
			return
		}
		if f, ok := s.takeFault(); ok {
			s.note(Request{Method: r.Method, Path: r.URL.Path, Answer: "fault " + f.Name}, "")
			for k, vs := range f.Header {
				for _, v := range vs {
					w.Header().Add(k, v)
				}
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("request-id", fmt.Sprintf("req_fake_fault_%d", s.Faulted()))
			w.WriteHeader(f.Status)
			_, _ = w.Write(f.Body)
			return
		}
	}
	s.handle(w, r)
}

// edgeAuth says whether the fault being injected answers requests without
// credentials itself (Fault.EdgeAuth).
func (s *Server) edgeAuth() bool {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	return s.fault != nil && !s.fault.Refuse && s.fault.EdgeAuth
}

// takeFault counts one request against the injected fault and returns it,
// or reports false when no fault answers this request.
func (s *Server) takeFault() (Fault, bool) {
	s.fmu.Lock()
	af := s.fault
	if af == nil || af.Refuse {
		// A request that arrived on a connection opened before a refusal
		// began is answered normally.
		s.fmu.Unlock()
		return Fault{}, false
	}
	af.answered++
	s.faulted++
	if af.answered == 1 && af.For > 0 && af.ForFromFirst {
		af.timer = time.AfterFunc(af.For, func() { s.endFault(af) })
	}
	done := af.Requests > 0 && af.answered >= af.Requests
	if done {
		s.stopFaultLocked()
	}
	s.fmu.Unlock()
	if done {
		s.t.Logf("fakeapi: fault %s ended after %d requests", af.Name, af.answered)
	}
	f := af.Fault
	if f.headerAt != nil {
		f.Header = f.headerAt(time.Now())
	}
	return f, true
}

// listener serves on one fixed address and can stop listening there
// (refusing connections) and listen there again.
type listener struct {
	addr string
	srv  *http.Server

	mu     sync.Mutex
	ln     net.Listener // nil while refusing
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup // the Serve goroutines
}

func newListener(h http.Handler) (*listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	l := &listener{addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	l.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(c net.Conn, st http.ConnState) {
			l.mu.Lock()
			defer l.mu.Unlock()
			switch st {
			case http.StateNew:
				l.conns[c] = true
			case http.StateClosed, http.StateHijacked:
				delete(l.conns, c)
			}
		}}
	l.serveLocked(ln)
	return l, nil
}

func (l *listener) serveLocked(ln net.Listener) {
	l.ln = ln
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		_ = l.srv.Serve(ln)
	}()
}

// refuse closes the listening socket and every open connection: new
// connections are refused until resume.
func (l *listener) refuse() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		_ = l.ln.Close()
		l.ln = nil
	}
	for c := range l.conns {
		_ = c.Close()
	}
}

// resume listens on the address again (a no-op if it already does).
func (l *listener) resume() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.ln != nil {
		return nil
	}
	var ln net.Listener
	var err error
	// The port was ours a moment ago; a short retry covers a slow release.
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", l.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	l.serveLocked(ln)
	return nil
}

// close stops the server for good and waits for its goroutines.
func (l *listener) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	_ = l.srv.Close()
	l.wg.Wait()
}
