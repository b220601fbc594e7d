// Package peers is the hook's side of a cluster's cross-host claims: a
// healthcheck.Peers that asks the host's relay (cluster/healthsync) over a
// unix socket, one JSON line each way. It imports no database driver and
// holds no secret: the hook learns only the socket's path (SocketEnv), and
// it dials only when a decision needs a claim (a probe or a trial), never
// on the hot path where the cache decides.
package peers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// SocketEnv names the variable that gives a session's hooks the path of
// their host's claims socket. It is not a secret: the socket lives in a
// folder only its owner can enter.
const SocketEnv = "NIGHTWATCH_CLUSTER_SOCKET"

// Ops of the line protocol.
const (
	OpClaim   = "claim"
	OpRelease = "release"
	OpPing    = "ping"
)

// Limits of the line protocol: anything larger is not a request a
// nightwatch sent.
const (
	MaxLine   = 4096
	MaxServer = 512
	MaxTTL    = 2 * time.Hour
)

// Request is one line a client sends.
type Request struct {
	Op     string `json:"op"`
	Server string `json:"server,omitempty"`
	Kind   string `json:"kind,omitempty"`
	// TTLMs bounds a claim: it ends then even if never released.
	TTLMs int64 `json:"ttl_ms,omitempty"`
	// Token is the claim's own id, from the answer that granted it: only
	// its holder can release it.
	Token string `json:"token,omitempty"`
}

// Response is the relay's answer, one line.
type Response struct {
	OK      bool   `json:"ok"`
	Granted bool   `json:"granted,omitempty"`
	Holder  string `json:"holder,omitempty"`
	Token   string `json:"token,omitempty"`
	Error   string `json:"error,omitempty"`
}

// ParseRequest reads one line of the protocol and checks it: a known op,
// a claim's kind (probe or trial), a server name of sensible length and a
// TTL within (0, MaxTTL]. It is the relay's only reader of what a local
// process sends, so it never trusts the line.
func ParseRequest(line []byte) (Request, error) {
	var r Request
	if len(line) > MaxLine {
		return r, fmt.Errorf("request of %d bytes is over the %d-byte limit", len(line), MaxLine)
	}
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Request{}, fmt.Errorf("not a request: %v", err)
	}
	if dec.More() {
		return Request{}, errors.New("not a request: more than one JSON value on the line")
	}
	switch r.Op {
	case OpPing:
		return r, nil
	case OpClaim, OpRelease:
	default:
		return Request{}, fmt.Errorf("unknown op %q", r.Op)
	}
	if r.Server == "" || len(r.Server) > MaxServer || strings.ContainsAny(r.Server, "\x00\n") {
		return Request{}, errors.New("a claim needs a server name (at most 512 bytes, one line)")
	}
	if r.Kind != "probe" && r.Kind != "trial" {
		return Request{}, fmt.Errorf("unknown claim kind %q (probe or trial)", r.Kind)
	}
	if r.Op == OpClaim && (r.TTLMs <= 0 || r.TTLMs > MaxTTL.Milliseconds()) {
		return Request{}, fmt.Errorf("a claim's ttl_ms must be within 1..%d, not %d", MaxTTL.Milliseconds(), r.TTLMs)
	}
	if r.Op == OpRelease && (r.Token == "" || len(r.Token) > 128) {
		return Request{}, errors.New("a release needs the token of its claim")
	}
	return r, nil
}

// Client asks one relay. Each call is one connection: a hook lives for one
// decision, and a claim outlives the connection (it ends by release or by
// its TTL), so nothing is lost when a hook dies holding one.
type Client struct {
	Path string
	// Timeout bounds each call, dial to answer (2 s when zero): a relay
	// that does not answer must not hold up a session's tool call.
	Timeout time.Duration
}

// New returns a client of the socket at path.
func New(path string, timeout time.Duration) *Client { return &Client{Path: path, Timeout: timeout} }

// Claim implements healthcheck.Peers.
func (c *Client) Claim(ctx context.Context, server, kind string, ttl time.Duration) (release func(), ok bool, holder string, err error) {
	ms := max(ttl.Milliseconds(), 1)
	resp, err := c.call(ctx, Request{Op: OpClaim, Server: server, Kind: kind, TTLMs: min(ms, MaxTTL.Milliseconds())})
	if err != nil {
		return nil, false, "", err
	}
	if !resp.Granted {
		return nil, false, resp.Holder, nil
	}
	token := resp.Token
	release = func() {
		// The claim's TTL ends it anyway; a release that fails only
		// makes the other hosts wait for that.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout())
		defer cancel()
		_, _ = c.call(rctx, Request{Op: OpRelease, Server: server, Kind: kind, Token: token})
	}
	return release, true, resp.Holder, nil
}

// Ping asks whether the relay answers.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.call(ctx, Request{Op: OpPing})
	return err
}

func (c *Client) timeout() time.Duration {
	if c.Timeout <= 0 {
		return 2 * time.Second
	}
	return c.Timeout
}

func (c *Client) call(ctx context.Context, req Request) (Response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Path)
	if err != nil {
		return Response{}, fmt.Errorf("the cluster's relay at %s (%s): %w", c.Path, SocketEnv, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	b, _ := json.Marshal(req)
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return Response{}, fmt.Errorf("the cluster's relay at %s: %w", c.Path, err)
	}
	line, err := bufio.NewReaderSize(conn, MaxLine).ReadSlice('\n')
	if err != nil {
		return Response{}, fmt.Errorf("the cluster's relay at %s did not answer: %w", c.Path, err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return Response{}, fmt.Errorf("the cluster's relay at %s answered something unreadable: %v", c.Path, err)
	}
	if !resp.OK {
		return Response{}, fmt.Errorf("the cluster's relay at %s: %s", c.Path, resp.Error)
	}
	return resp, nil
}
