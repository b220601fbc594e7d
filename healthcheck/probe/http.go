package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/redacturl"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// deleteTimeout bounds the DELETE that ends a probe's HTTP session. It runs
// even after the probe's deadline: an abandoned session costs the server a
// whole server object (server-everything keeps one per session).
const deleteTimeout = 250 * time.Millisecond

// maxRetryAfter caps a Retry-After so a silly value cannot overflow.
const maxRetryAfter = 7 * 24 * time.Hour

// HTTP probes a Streamable HTTP server as Claude Code 2.1.332 connects to
// one: it POSTs server/discover (protocol 2026-07-28) to srv.URL with the
// configured headers, then initialize when the server is legacy, reads the
// answers as JSON or as an event stream, and judges the HTTP status when
// there is no JSON-RPC answer. A URL that rejects both POSTs with 400, 404
// or 405 but opens an event stream with an endpoint event is a legacy
// HTTP+SSE server: Claude Code 2.1.332 falls back to that transport, and so
// does the probe (Result.LegacySSE).
func HTTP(ctx context.Context, srv *mcpconfig.Server, opts Options) Result {
	opts = opts.withDefaults()
	secrets := srv.Secrets()
	endpoint, err := parseEndpoint(srv.URL)
	if err != nil {
		return Result{Verdict: Transport, Tools: -1, Reason: scrub(err.Error(), secrets...)}
	}
	start := time.Now()
	probeCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	client := newHTTPClient(opts.rootCAs)
	defer client.CloseIdleConnections()

	conv := &streamableConv{client: client, endpoint: endpoint, headers: srv.Headers}
	res, err := handshake(probeCtx, conv, opts, start, true)
	conv.endSession(ctx)
	if err != nil && mayBeLegacySSE(err) {
		if sres, ok := sseFallback(probeCtx, client, srv, endpoint, opts, start); ok {
			return httpResult(sres, nil, sres.Status, 0, secrets)
		}
	}
	return httpResult(res, err, conv.status, bound(probeCtx, start), secrets)
}

// httpResult finishes an HTTP or SSE probe: a handshake error becomes its
// verdict; an answer under a non-2xx status still proves an MCP endpoint,
// and the reason says which status; secrets are scrubbed from the reason.
func httpResult(res Result, err error, status int, bound time.Duration, secrets []string) Result {
	if err != nil {
		res = failureResult(err, bound)
	} else if !is2xx(status) {
		res.Reason = fmt.Sprintf("HTTP %d, but %s: a live MCP endpoint refused the probe's request", status, res.Reason)
	}
	res.Status = status
	res.Reason = scrub(res.Reason, secrets...)
	return res
}

// mayBeLegacySSE reports whether initialize's answer is the one a legacy
// HTTP+SSE server gives a POST to its event-stream URL: 400, 404 or 405
// without a modern JSON-RPC error (the 2026-07-28 specification's
// backwards-compatibility rule; modern errors come back as answers).
func mayBeLegacySSE(err error) bool {
	var f *httpFailure
	if !errors.As(err, &f) {
		return false
	}
	switch f.status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		return true
	}
	return false
}

// sseFallback GETs the URL as a legacy HTTP+SSE stream and, when an
// endpoint event arrives, does the SSE handshake. ok=false when the URL is
// not an SSE endpoint either: the Streamable HTTP verdict stands.
func sseFallback(ctx context.Context, client *http.Client, srv *mcpconfig.Server, endpoint *url.URL, opts Options, start time.Time) (Result, bool) {
	conv := &sseConv{client: client, headers: srv.Headers}
	defer conv.close()
	if err := conv.open(ctx, endpoint); err != nil {
		return Result{}, false
	}
	res, err := handshake(ctx, conv, opts, start, false)
	if err != nil {
		res = failureResult(err, bound(ctx, start))
	}
	res.Status = conv.initStatus
	res.LegacySSE = true
	res.Reason = "legacy HTTP+SSE endpoint (Claude Code 2.1.332 falls back to it, 2.1.197 does not: set \"type\": \"sse\"): " + res.Reason
	return res, true
}

// finalAnswer reports whether an error answering server/discover already
// is the verdict, so that initialize would only hear it again: no HTTP
// answer at all, a redirect the probe does not follow, 401/403 (Claude
// Code goes to its OAuth flow, not to initialize) and 429.
func finalAnswer(err error) bool {
	var f *httpFailure
	if !errors.As(err, &f) {
		return false
	}
	switch {
	case f.status == 0,
		f.status == http.StatusUnauthorized, f.status == http.StatusForbidden,
		f.status == http.StatusTooManyRequests,
		f.status >= 300 && f.status < 400:
		return true
	}
	return false
}

// streamableConv is a Streamable HTTP session: one POST per message, the
// answer in the POST's response.
type streamableConv struct {
	client   *http.Client
	endpoint *url.URL
	headers  map[string]string

	status          int    // status of the last handshake POST (discover, initialize)
	sessionID       string // Mcp-Session-Id from the initialize answer
	discoverSession string // one a stateful server minted for discover
	protocolVersion string // sent as MCP-Protocol-Version
}

func (c *streamableConv) call(ctx context.Context, id int64, method string, params any) (*message, error) {
	resp, err := c.post(ctx, method, encodeRequest(id, method, params))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch method {
	case "initialize":
		c.sessionID = resp.Header.Get("Mcp-Session-Id")
		fallthrough
	case methodDiscover:
		c.status = resp.StatusCode
		if method == methodDiscover {
			c.discoverSession = resp.Header.Get("Mcp-Session-Id")
		}
		// Later requests go where redirects led.
		c.endpoint = resp.Request.URL
	}
	if !is2xx(resp.StatusCode) {
		return judgeStatus(resp, c.endpoint, true)
	}
	return readAnswer(ctx, resp, id, method)
}

func (c *streamableConv) notify(ctx context.Context, method string) error {
	resp, err := c.post(ctx, method, encodeNotification(method))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if !is2xx(resp.StatusCode) {
		_, err := judgeStatus(resp, c.endpoint, false)
		return err
	}
	return nil
}

func (c *streamableConv) setProtocolVersion(v string) { c.protocolVersion = v }

func (c *streamableConv) post(ctx context.Context, method string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	c.setSessionHeaders(req)
	if c.protocolVersion >= ModernProtocolVersion {
		// 2026-07-28 mirrors the method into a header for intermediaries;
		// a modern server rejects a request without it (HeaderMismatch).
		req.Header.Set("Mcp-Method", method)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, requestError(ctx, err, http.MethodPost, c.endpoint)
	}
	return resp, nil
}

func (c *streamableConv) setSessionHeaders(req *http.Request) {
	setConfiguredHeaders(req, c.headers)
	if c.sessionID != "" && c.protocolVersion < ModernProtocolVersion {
		req.Header.Set("Mcp-Session-Id", c.sessionID)
	}
	if c.protocolVersion != "" {
		req.Header.Set("MCP-Protocol-Version", c.protocolVersion)
	}
}

// endSession DELETEs the sessions the probe opened, briefly, whatever
// became of the probe.
func (c *streamableConv) endSession(parent context.Context) {
	if c.sessionID != "" {
		deleteSession(parent, c.client, c.endpoint, c.headers, c.sessionID, c.protocolVersion)
	}
	if c.discoverSession != "" && c.discoverSession != c.sessionID {
		deleteSession(parent, c.client, c.endpoint, c.headers, c.discoverSession, "")
	}
}

// deleteSession ends one Streamable HTTP session. It runs even after the
// probe's deadline: an abandoned session costs the server a whole server
// object (server-everything keeps one per session).
func deleteSession(parent context.Context, client *http.Client, endpoint *url.URL, headers map[string]string, id, protocolVersion string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), deleteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, endpoint.String(), nil)
	if err != nil {
		return
	}
	setConfiguredHeaders(req, headers)
	req.Header.Set("Mcp-Session-Id", id)
	if protocolVersion != "" && protocolVersion < ModernProtocolVersion {
		req.Header.Set("MCP-Protocol-Version", protocolVersion)
	}
	resp, err := client.Do(req)
	if err != nil {
		return // the probe's verdict does not depend on it
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}

// httpFailure is an HTTP exchange that yielded no JSON-RPC answer, already
// judged.
type httpFailure struct {
	verdict    Verdict
	status     int
	retryAfter time.Duration
	reason     string
	refused    bool
}

func (f *httpFailure) Error() string { return f.reason }

// failureResult turns an error from an HTTP conversation into a result.
func failureResult(err error, timeout time.Duration) Result {
	res := Result{Verdict: Transport, Tools: -1}
	var f *httpFailure
	switch {
	case errors.As(err, &f):
		res.Verdict, res.Status, res.RetryAfter, res.Reason, res.Refused = f.verdict, f.status, f.retryAfter, f.reason, f.refused
	case errors.Is(err, context.DeadlineExceeded):
		res.Reason = fmt.Sprintf("no answer to initialize within %s (hang)", timeout)
	case errors.Is(err, context.Canceled):
		res.Reason = "probe cancelled before initialize was answered"
	default:
		res.Reason = err.Error()
	}
	return res
}

// judgeStatus classifies a non-2xx answer. A 4xx other than 401/403/404/405
// that carries a JSON-RPC body comes from a live MCP endpoint that refused
// the probe's request (406, 400 on a protocol quarrel): when rpcBodyAnswers,
// that body is returned as the answer.
func judgeStatus(resp *http.Response, endpoint *url.URL, rpcBodyAnswers bool) (*message, error) {
	code := resp.StatusCode
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	status := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	fail := &httpFailure{status: code}
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		fail.verdict = AuthRequired
		if resp.Header.Get("WWW-Authenticate") != "" {
			fail.reason = status + " (WWW-Authenticate present)"
		} else {
			fail.reason = status + " (no WWW-Authenticate)"
		}
	case code == http.StatusTooManyRequests:
		fail.verdict = RateLimited
		fail.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		fail.reason = status
		if fail.retryAfter > 0 {
			fail.reason += fmt.Sprintf(" (Retry-After %s)", fail.retryAfter)
		}
	case code >= 500:
		fail.verdict = Unavailable
		fail.reason = status + excerpt(resp, body)
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		fail.verdict = NotMCP
		fail.reason = fmt.Sprintf("%s: no MCP endpoint at %s (wrong URL or transport?)", status, safeURL(endpoint))
	case code >= 400:
		if msgs, ok := parseMessages(body); ok && rpcBodyAnswers {
			for i := range msgs {
				if msgs[i].isResponse() {
					return &msgs[i], nil
				}
			}
		}
		fail.verdict = NotMCP
		fail.reason = status + " without a JSON-RPC answer" + excerpt(resp, body)
	case code >= 300:
		fail.verdict = NotMCP
		fail.reason = status + ": redirect not followed (only 307/308 to the same host are)"
		if loc, err := resp.Location(); err == nil {
			fail.reason += "; Location: " + safeURL(loc)
		}
	default:
		fail.verdict = NotMCP
		fail.reason = status + " is not an MCP answer"
	}
	return nil, fail
}

// excerpt quotes the start of an error body, or its JSON-RPC error.
func excerpt(resp *http.Response, body []byte) string {
	if msgs, ok := parseMessages(body); ok && msgs[0].Error != nil {
		return fmt.Sprintf(": JSON-RPC error %d: %s", msgs[0].Error.Code, clip(msgs[0].Error.Message, 160))
	}
	text := strings.TrimSpace(string(body))
	if text == "" {
		return ""
	}
	return fmt.Sprintf(": %s body %q", mediaType(resp), clip(text, 160))
}

// readAnswer reads the JSON-RPC answer to request id from a 2xx response,
// sent as application/json or as an event stream. It stops at the answer
// rather than waiting for the stream to end.
func readAnswer(ctx context.Context, resp *http.Response, id int64, method string) (*message, error) {
	status := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if mediaType(resp) == "text/event-stream" {
		return readEventAnswer(ctx, newEventReader(resp.Body), id, method, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMessageSize))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &httpFailure{verdict: Transport, status: resp.StatusCode,
			reason: fmt.Sprintf("%s: reading the answer to %s: %v", status, method, err)}
	}
	msgs, ok := parseMessages(body)
	if !ok {
		what := "an empty body"
		if len(bytes.TrimSpace(body)) > 0 {
			what = fmt.Sprintf("%s, not JSON-RPC (%q)", mediaTypeOr(resp, "no content type"), clip(string(body), 80))
		}
		return nil, &httpFailure{verdict: NotMCP, status: resp.StatusCode,
			reason: fmt.Sprintf("%s answered %s with %s", status, method, what)}
	}
	for i := range msgs {
		if msgs[i].answers(id) || msgs[i].hasNullID() {
			return &msgs[i], nil
		}
	}
	return nil, &httpFailure{verdict: NotMCP, status: resp.StatusCode,
		reason: fmt.Sprintf("%s: JSON-RPC body without an answer to %s", status, method)}
}

// readEventAnswer reads "message" events until one answers request id.
func readEventAnswer(ctx context.Context, events *eventReader, id int64, method string, code int) (*message, error) {
	status := fmt.Sprintf("HTTP %d", code)
	var garbage string
	for {
		ev, err := events.next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if garbage != "" {
				return nil, &httpFailure{verdict: NotMCP, status: code,
					reason: fmt.Sprintf("%s: event stream carried non-JSON-RPC data (%q) and no answer to %s", status, garbage, method)}
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("stream closed")
			}
			return nil, &httpFailure{verdict: Transport, status: code,
				reason: fmt.Sprintf("%s: event stream ended before the answer to %s: %v", status, method, err)}
		}
		if ev.Type != "message" {
			continue
		}
		msgs, ok := parseMessages([]byte(ev.Data))
		if !ok {
			if garbage == "" {
				garbage = clip(ev.Data, 80)
			}
			continue
		}
		for i := range msgs {
			if msgs[i].answers(id) {
				return &msgs[i], nil
			}
		}
	}
}

// requestError describes a request that got no HTTP answer: refused, DNS,
// reset, TLS. The probe's own deadline is reported as such by the caller.
func requestError(ctx context.Context, err error, method string, u *url.URL) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// url.Error repeats the full URL, query string (and any token in it)
	// included; keep only its cause.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &httpFailure{verdict: Transport, reason: fmt.Sprintf("%s %s: %v", method, safeURL(u), err), refused: connRefused(err)}
}

// connRefused says whether err is a refused TCP connection, from the
// dialer's errno (Windows: WSAECONNREFUSED, 10061), never from its text.
func connRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || (runtime.GOOS == "windows" && errors.Is(err, syscall.Errno(10061)))
}

// newHTTPClient is the one HTTP client of the package: the probers' and
// Wake's. rootCAs, when not nil, replaces the system roots (tests).
func newHTTPClient(rootCAs *x509.CertPool) *http.Client {
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if rootCAs != nil {
		transport.TLSClientConfig = &tls.Config{RootCAs: rootCAs, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: transport, CheckRedirect: followSameHost}
}

// followSameHost follows only 307/308 (which keep the POST and its body)
// and only to the same host and scheme: headers may carry credentials.
func followSameHost(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return http.ErrUseLastResponse
	}
	if req.Response != nil {
		switch req.Response.StatusCode {
		case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		default:
			return http.ErrUseLastResponse
		}
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// setConfiguredHeaders puts the config's headers on a request (a Host
// header names the virtual host, as in Claude Code's fetch).
func setConfiguredHeaders(req *http.Request, headers map[string]string) {
	req.Header.Set("User-Agent", userAgent())
	for name, value := range headers {
		if strings.EqualFold(name, "Host") {
			req.Host = value
			continue
		}
		req.Header.Set(name, value)
	}
}

// parseEndpoint checks the configured URL before anything is sent.
func parseEndpoint(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("invalid URL: cannot parse it")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid URL %s: want http(s)://host/…", safeURL(u))
	}
	return u, nil
}

// parseRetryAfter reads delta-seconds or an HTTP-date; 0 when absent or
// unreadable.
func parseRetryAfter(value string, now time.Time) time.Duration {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(value, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(maxRetryAfter/time.Second) || secs > math.MaxInt64/int64(time.Second) {
			return maxRetryAfter
		}
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(value); err == nil {
		d := at.Sub(now).Round(time.Second)
		return min(max(d, 0), maxRetryAfter)
	}
	return 0
}

// safeURL shows where a request went as redacturl.Elide does: scheme, host and
// port, the path only when it is made of plain endpoint words, never the
// userinfo or the query. Secret-URL services put the key in the path
// (/api/mcp/s/<secret>/mcp).
func safeURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	return redacturl.Elide(u.String())
}

func is2xx(code int) bool { return code >= 200 && code < 300 }

func mediaType(resp *http.Response) string {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

func mediaTypeOr(resp *http.Response, fallback string) string {
	if mt := mediaType(resp); mt != "" {
		return mt
	}
	return fallback
}
