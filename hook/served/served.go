// Package served answers Claude Code's http hooks inside the night's own
// process: the same decision as the command hook (package hook), for the
// sessions the night registered, without a process per call. Claude Code
// POSTs the hook's payload; the answer is what the command hook would
// print on stdout (a deny, an additionalContext, or {} to allow). What the
// hook says on stderr goes to the night's log, redacted, never to the
// model.
//
// A request without the night's token, or for a session the night did not
// register, is refused with 403 and nothing is decided: the session's
// PreToolUse hook has onFailure "block", so Claude Code then blocks the
// call rather than send it unchecked.
package served

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nightwatch-dev/nightwatch/hook"
	"github.com/nightwatch-dev/nightwatch/internal/knobs"
	"github.com/nightwatch-dev/nightwatch/internal/redact"
)

const (
	// TokenHeader carries the night's token on every hook request.
	TokenHeader = "X-Nightwatch-Token"
	// PathPrefix is followed by the session's key in a hook's URL.
	PathPrefix = "/hook/"
	// MaxPayload bounds a request's body. A payload carries the tool's
	// input and, after the call, its response: a large file read stays
	// far below it.
	MaxPayload = 16 << 20
)

// Session is what the hook reads of one session: its environment (the one
// the night gives the session's CLI) and the knobs its command hook would
// get from its flags.
type Session struct {
	// Environ is the session's environment (KEY=VALUE), which its
	// probes' stdio servers and reconnect commands start from; Getenv
	// reads it.
	Environ []string
	Getenv  knobs.Getenv
	Home    string
	Knobs   knobs.Knobs
}

// Knobs are the knobs of a hook whose command line has args (the flags
// knobs.Flags registers), laid over the environment getenv reads as the
// hook executable lays them: the served hook of a session decides with
// the values its command hook would have.
func Knobs(args []string, getenv knobs.Getenv, home string) (knobs.Knobs, error) {
	fs := flag.NewFlagSet("served hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var fl knobs.Flags
	fl.Register(fs, true)
	if err := fs.Parse(args); err != nil {
		return knobs.Knobs{}, fmt.Errorf("served hook: the hook's flags: %w", err)
	}
	if fs.NArg() > 0 {
		return knobs.Knobs{}, fmt.Errorf("served hook: unexpected arguments %q", fs.Args())
	}
	changed := map[string]bool{}
	fs.Visit(func(x *flag.Flag) { changed[x.Name] = true })
	k := knobs.FromEnv(getenv, home)
	k.Apply(&fl, func(name string) bool { return changed[name] }, home, getenv)
	return k, nil
}

// Handler serves the hooks of the registered sessions. Its zero value is
// not usable: New makes one with a token.
type Handler struct {
	token []byte
	// Log receives each line the hook says on stderr, with the session's
	// key; nil drops them.
	Log func(key, line string)

	mu       sync.RWMutex
	sessions map[string]Session
}

// New makes a Handler with a fresh random token.
func New(log func(key, line string)) (*Handler, error) {
	t, err := randomHex(32)
	if err != nil {
		return nil, fmt.Errorf("served hook: make a token: %w", err)
	}
	return &Handler{token: []byte(t), Log: log, sessions: map[string]Session{}}, nil
}

// Token is the value a hook's TokenHeader must carry. A secret: it goes
// only into the session's owner-only settings file.
func (h *Handler) Token() string { return string(h.token) }

// Register adds a session and returns its key, random and unguessable, for
// its hook's URL (PathPrefix + key).
func (h *Handler) Register(s Session) (string, error) {
	key, err := h.Reserve()
	if err != nil {
		return "", err
	}
	h.Bind(key, s)
	return key, nil
}

// Reserve makes a key for a session not known yet (the night writes the
// session's settings, which name the key, before the files the session's
// knobs name): its requests are refused until Bind.
func (h *Handler) Reserve() (string, error) {
	key, err := randomHex(16)
	if err != nil {
		return "", fmt.Errorf("served hook: make a session key: %w", err)
	}
	return key, nil
}

// Bind serves s under key (from Reserve).
func (h *Handler) Bind(key string, s Session) {
	h.mu.Lock()
	h.sessions[key] = s
	h.mu.Unlock()
}

// Unregister removes a session: its hooks are refused from then on.
func (h *Handler) Unregister(key string) {
	h.mu.Lock()
	delete(h.sessions, key)
	h.mu.Unlock()
}

func (h *Handler) session(key string) (Session, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	s, ok := h.sessions[key]
	return s, ok
}

// ServeHTTP runs one hook. The request's context is the hook's: a CLI
// that gives up on the request (its timeout) ends a hold.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	// Constant time: the token is compared before anything else is read.
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(TokenHeader)), h.token) != 1 {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	key, ok := strings.CutPrefix(r.URL.Path, PathPrefix)
	s, known := h.session(key)
	if !ok || !known {
		// A session the night does not know (or no longer: it ended) is
		// decided for by nobody: refused, so a PreToolUse blocks.
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayload+1))
	if err != nil {
		http.Error(w, "cannot read the payload", http.StatusBadRequest)
		return
	}
	if len(body) > MaxPayload {
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return
	}
	out := h.Run(r.Context(), key, s, body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// Run decides one payload for session s as the command hook does and
// returns the response's body: the JSON the command hook prints on
// stdout, or {} when it prints nothing (an allow, or a Post event that
// only records). The exit code adds nothing: a block's deny is on stdout.
func (h *Handler) Run(ctx context.Context, key string, s Session, payload []byte) []byte {
	var stdout, stderr bytes.Buffer
	hook.Run(ctx, hook.Env{Getenv: s.Getenv, Home: s.Home, Stdin: bytes.NewReader(payload),
		Stdout: &stdout, Stderr: &stderr, Knobs: s.Knobs, Environ: s.Environ})
	if h.Log != nil {
		sc := bufio.NewScanner(&stderr)
		sc.Buffer(nil, MaxPayload)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				h.Log(key, redact.String(line))
			}
		}
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if len(out) == 0 {
		return []byte("{}")
	}
	return out
}

// Server is a Handler listening on loopback for the night's life.
type Server struct {
	*Handler
	ln  net.Listener
	srv *http.Server
	// done is closed when Serve returned.
	done chan struct{}
}

// Listen starts serving h on 127.0.0.1 at a port the system picks.
func Listen(h *Handler) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("served hook: listen on loopback: %w", err)
	}
	s := &Server{Handler: h, ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Start makes a Handler (New) and serves it on loopback (Listen).
func Start(log func(key, line string)) (*Server, error) {
	h, err := New(log)
	if err != nil {
		return nil, err
	}
	return Listen(h)
}

// URL is the hook URL of the session registered as key.
func (s *Server) URL(key string) string {
	return "http://" + s.ln.Addr().String() + PathPrefix + key
}

// Close stops listening and ends the requests still running (their holds
// end with their contexts): the night closes it after its last session.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
