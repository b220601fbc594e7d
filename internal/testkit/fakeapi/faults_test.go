package fakeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// rawPost sends a minimal main-conversation request and returns the status,
// headers and body, or the transport error.
func rawPost(s *Server) (int, http.Header, map[string]any, error) {
	b, _ := json.Marshal(map[string]any{"model": "m", "stream": false,
		"messages": msgs(user(text("hi"))), "tools": []any{map[string]any{"name": "t"}}})
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := c.Post(s.URL()+"/v1/messages", "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, resp.Header, m, nil
}

func errorOf(m map[string]any) (typ, msg string) {
	e, _ := m["error"].(map[string]any)
	typ, _ = e["type"].(string)
	msg, _ = e["message"].(string)
	return typ, msg
}

func TestFaultAnswers(t *testing.T) {
	reset := time.Date(2026, 12, 3, 13, 55, 0, 0, time.UTC)
	cases := []struct {
		fault   Fault
		status  int
		errType string
		msg     string
		headers map[string]string
	}{
		{ServerError(500), 500, "api_error", "Internal server error", nil},
		{ServerError(502), 502, "api_error", "Bad gateway", nil},
		{ServerError(503), 503, "api_error", "Service unavailable", nil},
		{Overloaded(), 529, "overloaded_error", "Overloaded", nil},
		{InvalidAPIKey(), 401, "authentication_error", "invalid x-api-key", nil},
		{AccountRateLimit(), 429, "rate_limit_error", AccountRateLimitMessage, map[string]string{"retry-after": "1"}},
		{UsageLimit(SevenDay, reset), 429, "rate_limit_error", "Rate limit exceeded", map[string]string{
			"anthropic-ratelimit-unified-status":               "rejected",
			"anthropic-ratelimit-unified-representative-claim": "seven_day",
			"anthropic-ratelimit-unified-reset":                strconv.FormatInt(reset.Unix(), 10),
			"anthropic-ratelimit-unified-7d-status":            "rejected",
		}},
		{UsageLimit(FiveHour, reset), 429, "rate_limit_error", "Rate limit exceeded", map[string]string{
			"anthropic-ratelimit-unified-representative-claim": "five_hour",
			"anthropic-ratelimit-unified-5h-reset":             strconv.FormatInt(reset.Unix(), 10),
		}},
		{PromptTooLong(), 400, "invalid_request_error", PromptTooLongMessage, nil},
	}
	for _, c := range cases {
		t.Run(c.fault.Name, func(t *testing.T) {
			s := Start(t)
			s.Inject(c.fault)
			status, h, body, err := rawPost(s)
			if err != nil {
				t.Fatal(err)
			}
			typ, msg := errorOf(body)
			if status != c.status || body["type"] != "error" || typ != c.errType || msg != c.msg {
				t.Errorf("answer %d %v, want %d error %s %q", status, body, c.status, c.errType, c.msg)
			}
			for k, v := range c.headers {
				if got := h.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if h.Get("request-id") == "" {
				t.Errorf("no request-id header")
			}
			// For good: it keeps failing until Clear.
			if status, _, _, _ := rawPost(s); status != c.status {
				t.Errorf("second request %d, want %d (a fault without a window lasts)", status, c.status)
			}
			s.Clear()
			if status, _, _, err := rawPost(s); err != nil || status != 200 {
				t.Errorf("after Clear: %d %v, want 200", status, err)
			}
			if s.Faulted() != 2 {
				t.Errorf("Faulted = %d, want 2", s.Faulted())
			}
		})
	}
}

func TestFaultWindowByRequests(t *testing.T) {
	s := Start(t)
	f := Overloaded()
	f.Requests = 2
	s.Inject(f)
	var got []int
	for range 4 {
		st, _, _, err := rawPost(s)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, st)
	}
	if want := []int{529, 529, 200, 200}; !equalInts(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	if s.Faulting() {
		t.Errorf("still faulting after its window")
	}
}

// waitFaultEnded waits for a timed fault's end: a minute is a fault that
// never ends, not a slow machine.
func waitFaultEnded(t *testing.T, s *Server) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); s.Faulting(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a timed fault never ended")
		}
	}
}

// A fault with For answers inside its window and ends by itself. Inside is
// an hour long, so no machine is too slow to be in it; the end is a short
// window waited for, not slept through.
func TestFaultWindowByTime(t *testing.T) {
	s := Start(t)
	f := ServerError(503)
	f.For = time.Hour
	s.Inject(f)
	if st, _, _, _ := rawPost(s); st != 503 {
		t.Errorf("inside the window: %d, want 503", st)
	}
	f.For = 50 * time.Millisecond
	s.Inject(f)
	waitFaultEnded(t, s)
	if st, _, _, err := rawPost(s); st != 200 {
		t.Errorf("after the window: %d %v, want 200", st, err)
	}
}

func TestCountTokensNotFaulted(t *testing.T) {
	s := Start(t)
	s.Inject(Overloaded())
	evs := post(t, s, "/v1/messages/count_tokens", map[string]any{"messages": msgs(user(text("x")))})
	if len(evs) != 1 || evs[0].Data["input_tokens"] == nil {
		t.Errorf("count_tokens answer %v, want input_tokens", evs)
	}
}

func TestRefusedThenBackOnSamePort(t *testing.T) {
	s := Start(t)
	url := s.URL()
	// A kept-alive connection opened before the outage must not survive it.
	keep := &http.Client{Timeout: 5 * time.Second}
	if resp, err := keep.Get(url + "/"); err == nil {
		resp.Body.Close()
	}
	// An hour's refusal: no machine is too slow to be inside it.
	f := Refused()
	f.For = time.Hour
	s.Inject(f)
	_, _, _, err := rawPost(s)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("during refusal: err %v, want ECONNREFUSED", err)
	}
	if resp, err := keep.Get(url + "/"); err == nil {
		resp.Body.Close()
		t.Errorf("a kept-alive client still got an answer during the refusal")
	}
	// A short one, refused anew, ends by itself: back on the same port.
	f.For = 50 * time.Millisecond
	s.Inject(f)
	waitFaultEnded(t, s)
	if s.URL() != url {
		t.Errorf("URL changed %s -> %s", url, s.URL())
	}
	// The fault ends before the port listens again: poll for the answer.
	st, _, _, err := rawPost(s)
	for deadline := time.Now().Add(time.Minute); (err != nil || st != 200) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		st, _, _, err = rawPost(s)
	}
	if err != nil || st != 200 {
		t.Errorf("after the refusal: %d %v, want 200 on the same port", st, err)
	}
}

func TestRefusedForGoodUntilClear(t *testing.T) {
	s := Start(t)
	s.Inject(Refused())
	time.Sleep(50 * time.Millisecond)
	if _, _, _, err := rawPost(s); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("err %v, want ECONNREFUSED", err)
	}
	// Another fault over a refusal listens again and answers with it.
	s.Inject(Overloaded())
	if st, _, _, err := rawPost(s); err != nil || st != 529 {
		t.Errorf("after Inject(Overloaded) over a refusal: %d %v, want 529", st, err)
	}
	s.Inject(Refused())
	s.Clear()
	if st, _, _, err := rawPost(s); err != nil || st != 200 {
		t.Errorf("after Clear: %d %v, want 200", st, err)
	}
}

func TestNoFaultIsDefault(t *testing.T) {
	s := Start(t)
	if st, _, body, err := rawPost(s); err != nil || st != 200 || body["type"] != "message" {
		t.Errorf("default answer %d %v %v, want a message", st, body, err)
	}
	if s.Faulting() || s.Faulted() != 0 {
		t.Errorf("a fresh fake reports a fault")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEdgeAuth: while an EdgeAuth fault lasts, a request without
// credentials gets the edge's 401 (and is not counted), one with a key
// meets the fault; afterwards both are answered normally.
func TestEdgeAuth(t *testing.T) {
	s := Start(t)
	f := Overloaded()
	f.EdgeAuth = true
	s.Inject(f)
	post := func(key string) int {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/messages", bytes.NewReader([]byte("{}")))
		if key != "" {
			req.Header.Set("x-api-key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		key  string
		want int
	}{{"", 401}, {"k", 529}, {"", 401}} {
		if got := post(c.key); got != c.want {
			t.Errorf("key %q: %d, want %d", c.key, got, c.want)
		}
	}
	if s.Faulted() != 1 {
		t.Errorf("faulted %d, want 1: the edge's 401s are not the fault's", s.Faulted())
	}
	s.Clear()
	if got := post(""); got != 200 {
		t.Errorf("after the fault: %d, want 200", got)
	}
}
