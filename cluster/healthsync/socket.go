package healthsync

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/cluster/peers"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

// maxSocketPath: a unix socket's path must fit sockaddr_un (104 bytes on
// macOS, 108 on Linux, with the terminating NUL).
const maxSocketPath = 100

// socketIdle bounds how long a connection may stay silent: a client sends
// its line at once.
const socketIdle = 10 * time.Second

// listenSocket opens the claims socket: in dir (or the default folder),
// named by a short hash of the cache, the host and this process, so two
// relays never share one and the path stays short.
func listenSocket(dir, cachePath, host string) (net.Listener, string, error) {
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "nightwatch-"+userTag())
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("shared health: the claims socket's folder: %w", err)
	}
	if err := privateDir(dir); err != nil {
		return nil, "", fmt.Errorf("shared health: the claims socket's folder %s: %w", dir, err)
	}
	abs, _ := filepath.Abs(cachePath)
	sum := sha256.Sum256([]byte(abs + "\x00" + host + "\x00" + strconv.Itoa(os.Getpid())))
	path := filepath.Join(dir, hex.EncodeToString(sum[:6])+".sock")
	if len(path) > maxSocketPath {
		return nil, "", fmt.Errorf("shared health: the claims socket's path %s is %d bytes, over the %d a unix socket allows; choose a shorter folder", path, len(path), maxSocketPath)
	}
	// Left by a process of the same id that died: ours to replace.
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, "", fmt.Errorf("shared health: open the claims socket: %w", err)
	}
	_ = os.Chmod(path, 0o600)
	return ln, path, nil
}

// serve answers the host's hooks on the claims socket.
func (r *Relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.sock.Accept()
		if err != nil {
			if r.ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			r.warnf("accept", "the claims socket stopped accepting (%v); hooks on this host decide as single hosts", err)
			return
		}
		r.connMu.Lock()
		if r.ctx.Err() != nil {
			r.connMu.Unlock()
			_ = c.Close()
			return
		}
		r.conns[c] = struct{}{}
		r.accepted.Add(1)
		r.wg.Add(1)
		r.connMu.Unlock()
		go r.handle(c)
	}
}

// handle answers one connection, line by line. Garbage gets an error line;
// a line over the limit ends the connection.
func (r *Relay) handle(c net.Conn) {
	defer r.wg.Done()
	defer func() {
		r.connMu.Lock()
		delete(r.conns, c)
		r.connMu.Unlock()
		_ = c.Close()
	}()
	br := bufio.NewReaderSize(c, peers.MaxLine+1)
	for {
		_ = c.SetDeadline(time.Now().Add(socketIdle))
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			r.reply(c, peers.Response{Error: fmt.Sprintf("request over the %d-byte limit", peers.MaxLine)})
			return
		}
		if err != nil {
			return
		}
		req, err := peers.ParseRequest(line)
		if err != nil {
			if !r.reply(c, peers.Response{Error: err.Error()}) {
				return
			}
			continue
		}
		if !r.reply(c, r.answer(req)) {
			return
		}
	}
}

func (r *Relay) reply(c net.Conn, resp peers.Response) bool {
	b, _ := json.Marshal(resp)
	_, err := c.Write(append(b, '\n'))
	return err == nil
}

// answer grants and releases claims through the table, so that they hold
// across hosts. A server that is not the batch's is not shared: its claims
// are granted at once (this host's own locks make it single-flight here).
func (r *Relay) answer(req peers.Request) peers.Response {
	if req.Op == peers.OpPing {
		return peers.Response{OK: true, Holder: r.host}
	}
	if !r.shared[req.Server] {
		return peers.Response{OK: true, Granted: req.Op == peers.OpClaim, Holder: r.host, Token: "local"}
	}
	ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
	defer cancel()
	switch req.Op {
	case peers.OpClaim:
		token := newToken()
		granted, holder, err := r.db.Claim(ctx, req.Server, req.Kind, r.host+"#"+token, time.Duration(req.TTLMs)*time.Millisecond)
		if err != nil {
			return peers.Response{Error: "the cluster's database: " + redact.String(err.Error())}
		}
		resp := peers.Response{OK: true, Granted: granted, Holder: holderHost(holder)}
		if granted {
			resp.Token = token
			// The previous holder's verdict may be in the table and not
			// yet here: bring it in before the caller looks at its cache,
			// or it would probe a server another host just probed.
			r.onSyncWithin(ctx, func() { r.pullOne(req.Server) })
		}
		return resp
	default: // release
		// The verdict the holder reached leaves this host before the
		// claim does, so that nobody who gets the claim next misses it.
		r.onSyncWithin(ctx, func() { r.scan(r.ctx, true) })
		if err := r.db.ReleaseClaim(ctx, req.Server, req.Kind, r.host+"#"+req.Token); err != nil {
			return peers.Response{Error: "the cluster's database: " + redact.String(err.Error())}
		}
		return peers.Response{OK: true}
	}
}

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// holderHost is the host part of a claim's holder (host#token).
func holderHost(holder string) string {
	if i := strings.LastIndexByte(holder, '#'); i >= 0 {
		return holder[:i]
	}
	if holder == "" {
		return "(released)"
	}
	return holder
}
