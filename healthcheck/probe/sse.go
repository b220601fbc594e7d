package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// SSE probes a server on the legacy HTTP+SSE transport: a GET to srv.URL
// opens an event stream whose first "endpoint" event says where to POST
// messages; answers come back as "message" events on the stream.
func SSE(ctx context.Context, srv *mcpconfig.Server, opts Options) Result {
	opts = opts.withDefaults()
	secrets := srv.Secrets()
	streamURL, err := parseEndpoint(srv.URL)
	if err != nil {
		return Result{Verdict: Transport, Tools: -1, Reason: scrub(err.Error(), secrets...)}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	client := newHTTPClient(opts.rootCAs)
	defer client.CloseIdleConnections()

	conv := &sseConv{client: client, headers: srv.Headers}
	var res Result
	err = conv.open(ctx, streamURL)
	if err == nil {
		res, err = handshake(ctx, conv, opts, start, false)
	}
	conv.close()
	return httpResult(res, err, conv.initStatus, bound(ctx, start), secrets)
}

// sseConv is a legacy SSE session: the open GET stream and the endpoint
// messages are POSTed to.
type sseConv struct {
	client  *http.Client
	headers map[string]string

	stream       *http.Response
	streamStatus int
	events       *eventReader
	endpoint     *url.URL

	// initStatus is the status of the initialize POST, or of the GET
	// when the probe did not get that far.
	initStatus int
}

// open GETs the event stream and waits for its endpoint event.
func (c *sseConv) open(ctx context.Context, streamURL *url.URL) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, streamURL.String(), nil)
	if err != nil {
		return fmt.Errorf("building request: %w", err)
	}
	setConfiguredHeaders(req, c.headers)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := c.client.Do(req)
	if err != nil {
		return requestError(ctx, err, http.MethodGet, streamURL)
	}
	c.stream, c.streamStatus, c.initStatus = resp, resp.StatusCode, resp.StatusCode
	streamURL = resp.Request.URL // after redirects

	if !is2xx(resp.StatusCode) {
		msg, err := judgeStatus(resp, streamURL, true)
		if msg != nil {
			// Only a Streamable HTTP server answers a GET with JSON-RPC;
			// Claude Code's SSE client could not use it.
			return &httpFailure{verdict: NotMCP, status: resp.StatusCode,
				reason: fmt.Sprintf("HTTP %d with a JSON-RPC body to the event-stream GET: a Streamable HTTP endpoint? (try type http)", resp.StatusCode)}
		}
		return err
	}
	if mt := mediaType(resp); mt != "text/event-stream" {
		return &httpFailure{verdict: NotMCP, status: resp.StatusCode,
			reason: fmt.Sprintf("HTTP %d answered the GET with %s, not an event stream", resp.StatusCode, mediaTypeOr(resp, "no content type"))}
	}

	c.events = newEventReader(resp.Body)
	for {
		ev, err := c.events.next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("stream closed")
			}
			return &httpFailure{verdict: Transport, status: resp.StatusCode,
				reason: fmt.Sprintf("event stream ended before the endpoint event: %v", err)}
		}
		if ev.Type != "endpoint" {
			continue
		}
		endpoint, err := streamURL.Parse(strings.TrimSpace(ev.Data))
		if err != nil {
			return &httpFailure{verdict: NotMCP, status: resp.StatusCode,
				reason: "endpoint event with an unreadable URL"}
		}
		// The TypeScript SDK Claude Code uses refuses another origin too:
		// the configured headers (tokens) must not go elsewhere.
		if endpoint.Scheme != streamURL.Scheme || endpoint.Host != streamURL.Host {
			return &httpFailure{verdict: NotMCP, status: resp.StatusCode,
				reason: fmt.Sprintf("endpoint event points to another origin (%s); not followed", safeURL(endpoint))}
		}
		c.endpoint = endpoint
		return nil
	}
}

func (c *sseConv) close() {
	if c.stream != nil {
		c.stream.Body.Close()
	}
}

func (c *sseConv) call(ctx context.Context, id int64, method string, params any) (*message, error) {
	resp, err := c.post(ctx, encodeRequest(id, method, params))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if method == "initialize" {
		c.initStatus = resp.StatusCode
	}
	if !is2xx(resp.StatusCode) {
		return judgeStatus(resp, c.endpoint, true)
	}
	// The transport answers on the stream (POST: 202); a lenient server
	// may answer in the POST's body instead.
	if resp.StatusCode == http.StatusOK && mediaType(resp) == "application/json" {
		if msg, err := readAnswer(ctx, resp, id, method); err == nil {
			return msg, nil
		}
	}
	return readEventAnswer(ctx, c.events, id, method, c.streamStatus)
}

func (c *sseConv) notify(ctx context.Context, method string) error {
	resp, err := c.post(ctx, encodeNotification(method))
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

func (c *sseConv) setProtocolVersion(string) {}

func (c *sseConv) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	setConfiguredHeaders(req, c.headers)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, requestError(ctx, err, http.MethodPost, c.endpoint)
	}
	return resp, nil
}
