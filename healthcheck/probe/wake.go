package probe

import (
	"bytes"
	"context"
	"crypto/x509"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// Wake-up retries: a cold endpoint (a scaled-to-zero container, a proxy
// whose upstream is starting) answers 502/503/504 or refuses for a few
// seconds. Four tries a few hundred milliseconds apart cover that; a longer
// outage is the probe's verdict to report.
const (
	DefaultWakeRetries = 3
	defaultWakeWaitMin = 200 * time.Millisecond
	defaultWakeWaitMax = 2 * time.Second
)

// WakeOptions tune Wake; the zero value is the default.
type WakeOptions struct {
	// Retries after the first try; 0 means DefaultWakeRetries, <0 none.
	Retries int
	// WaitMin and WaitMax bound the backoff between tries (a Retry-After
	// within the budget is honoured whatever they say).
	WaitMin, WaitMax time.Duration

	rootCAs *x509.CertPool // tests' TLS servers
}

// WakeResult says what a wake-up reached.
type WakeResult struct {
	// Awake: the endpoint gave an answer that is not "come back later"
	// (429, 502, 503, 504).
	Awake bool
	// Attempts is how many requests were sent.
	Attempts int
	// Status is the last answer's HTTP status, 0 when none came.
	Status int
}

// Wake sends an HTTP or SSE server the request a session sends first (a
// server/discover POST, as Claude Code 2.1.332 opens; the event-stream GET
// for the legacy SSE transport), so that a cold endpoint starts now and is
// warm for the probe that gives the verdict. It retries connection errors
// and 429/502/503/504 with go-retryablehttp, honouring Retry-After, but gives
// up at once when the server asks for longer than the budget left: the probe
// then reports rate-limited and the cache keeps the server blocked until the
// time the server named. It goes through the probers' client: the
// configured headers, and redirects followed only as 307/308 to the same
// scheme and host, so credentials never reach another host or plain http.
// Other transports need no wake-up (the zero WakeResult).
func Wake(ctx context.Context, srv *mcpconfig.Server, budget time.Duration, opts WakeOptions) WakeResult {
	if srv.Transport != mcpconfig.HTTP && srv.Transport != mcpconfig.SSE {
		return WakeResult{}
	}
	endpoint, err := parseEndpoint(srv.URL)
	if err != nil {
		return WakeResult{}
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	var attempts atomic.Int32
	client := &retryablehttp.Client{
		HTTPClient:   newHTTPClient(opts.rootCAs),
		RetryMax:     opts.retries(),
		RetryWaitMin: orDefault(opts.WaitMin, defaultWakeWaitMin),
		RetryWaitMax: orDefault(opts.WaitMax, defaultWakeWaitMax),
		CheckRetry:   wakeRetryPolicy,
		Backoff:      retryablehttp.DefaultBackoff,
		// Hand back the last answer when retries run out, not an error
		// that hides its status.
		ErrorHandler:   retryablehttp.PassthroughErrorHandler,
		RequestLogHook: func(retryablehttp.Logger, *http.Request, int) { attempts.Add(1) },
	}
	defer client.HTTPClient.CloseIdleConnections()

	var req *retryablehttp.Request
	if srv.Transport == mcpconfig.SSE {
		req, err = retryablehttp.NewRequestWithContext(ctx, http.MethodGet, endpoint.String(), nil)
	} else {
		req, err = retryablehttp.NewRequestWithContext(ctx, http.MethodPost, endpoint.String(),
			bytes.NewReader(encodeRequest(discoverID, methodDiscover, discoverParams())))
	}
	if err != nil {
		return WakeResult{}
	}
	setConfiguredHeaders(req.Request, srv.Headers)
	if srv.Transport == mcpconfig.SSE {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", ModernProtocolVersion)
		req.Header.Set("Mcp-Method", methodDiscover)
	}
	resp, err := client.Do(req)
	w := WakeResult{Attempts: int(attempts.Load())}
	if err != nil || resp == nil {
		return w
	}
	// Only the status matters; an event stream may never end on its own.
	_ = resp.Body.Close()
	w.Status = resp.StatusCode
	w.Awake = !comeBackLater(resp.StatusCode)
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		// A stateful server may mint a session even for discover; it
		// keeps one server object per session.
		deleteSession(ctx, client.HTTPClient, resp.Request.URL, srv.Headers, id, "")
	}
	return w
}

func (o WakeOptions) retries() int {
	switch {
	case o.Retries < 0:
		return 0
	case o.Retries == 0:
		return DefaultWakeRetries
	}
	return o.Retries
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// wakeRetryPolicy retries what a waking server says (connection errors,
// 429, 502, 503, 504) and nothing else: any other answer proves the
// endpoint is up, and the probe judges it.
func wakeRetryPolicy(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		// The default policy knows which errors no retry can fix (bad
		// URL, unknown certificate authority, too many redirects).
		return retryablehttp.DefaultRetryPolicy(ctx, nil, err)
	}
	if !comeBackLater(resp.StatusCode) {
		return false, nil
	}
	// DefaultBackoff returns the Retry-After for 429/503 (zero when the
	// minimum is zero and none was sent). A server asking for longer than
	// the budget left will not be ready in time: stop waiting now.
	wait := retryablehttp.DefaultBackoff(0, 0, 0, resp)
	if dl, ok := ctx.Deadline(); ok && time.Now().Add(wait).After(dl) {
		return false, nil
	}
	return true, nil
}

func comeBackLater(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
