package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/command"
	"github.com/nightwatch-dev/nightwatch/internal/environ"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
	"github.com/nightwatch-dev/nightwatch/mcpconfig"
)

// stopGrace is how long a stdio server gets between SIGTERM and SIGKILL of
// its process group. A probe's server has no state worth a long goodbye.
const stopGrace = 200 * time.Millisecond

// stderrTailSize is how much of a server's stderr a reason may quote.
const stderrTailSize = 2 << 10

// Stdio probes a stdio server the way Claude Code starts it: srv.Command
// with srv.Args, the session's environment with srv.Env laid over it, in the
// session's cwd. It does the real handshake over stdin/stdout (the
// article's "stays alive for 5 s" check called servers healthy that crashed
// in the handshake): server/discover, then initialize on the same process
// when the server is legacy, or on a new one when the first exited on
// discover. Then it kills the server's whole process group.
func Stdio(ctx context.Context, srv *mcpconfig.Server, opts Options) Result {
	opts = opts.withDefaults()
	secrets := srv.Secrets()
	if srv.Command == "" {
		return Result{Verdict: Transport, Tools: -1, Reason: "no command configured"}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	s, err := startStdio(ctx, srv, opts)
	if err != nil {
		return Result{Verdict: Transport, Tools: -1,
			Reason: scrub(fmt.Sprintf("cannot start %s: %v", srv.Command, err), secrets...)}
	}
	conv := &stdioConv{cur: s, start: func() (*stdioServer, error) { return startStdio(ctx, srv, opts) }}
	res, err := handshake(ctx, conv, opts, start, true)
	conv.cur.stop()
	if err == nil {
		if conv.cur.garbage != "" {
			res.Reason += fmt.Sprintf("; ignored non-JSON-RPC stdout output %q", conv.cur.garbage)
		}
		res.Reason = scrub(res.Reason, secrets...)
		return res
	}
	return conv.cur.failure(err, bound(ctx, start), secrets)
}

// serverEnviron is a stdio server's environment: the base variables of
// from (os.Environ() when nil) with the server's own env laid over them;
// all of from with inherit (Options.InheritEnviron).
func serverEnviron(from []string, own map[string]string, inherit bool) []string {
	if from == nil {
		from = os.Environ()
	}
	if inherit {
		return environ.Overlay(from, own)
	}
	return environ.Overlay(environ.Base(from), own)
}

// stdioConv is the conversation with a stdio server: the process that runs
// now, and how to start another.
type stdioConv struct {
	cur   *stdioServer
	start func() (*stdioServer, error)
}

func (c *stdioConv) call(ctx context.Context, id int64, method string, params any) (*message, error) {
	return c.cur.call(ctx, id, method, params)
}
func (c *stdioConv) notify(ctx context.Context, method string) error {
	return c.cur.notify(ctx, method)
}
func (c *stdioConv) setProtocolVersion(string) {}
func (c *stdioConv) send(id int64, method string, params any) error {
	return c.cur.send(encodeRequest(id, method, params))
}
func (c *stdioConv) await(ctx context.Context, ids ...int64) (*message, error) {
	return c.cur.await(ctx, ids...)
}

// respawn starts a new process when the current one exited or closed its
// stdout, keeping what the old one printed on stdout for the reason.
func (c *stdioConv) respawn(err error) (bool, error) {
	var exit *exitError
	if !errors.As(err, &exit) && !errors.Is(err, errStdoutClosed) {
		return false, nil
	}
	old := c.cur
	old.stop()
	s, err := c.start()
	if err != nil {
		return true, fmt.Errorf("starting the server again after it ended on server/discover: %w", err)
	}
	s.garbage = old.garbage
	c.cur = s
	return true, nil
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// bound is how long the probe had: opts.Timeout, or less when the caller's
// context ends first. Reasons quote it ("no answer within 5s").
func bound(ctx context.Context, start time.Time) time.Duration {
	deadline, _ := ctx.Deadline() // the probe always sets one
	return deadline.Sub(start).Round(time.Millisecond)
}

// stdioServer is a started server and the goroutines that feed its output
// back; stop ends all of them.
type stdioServer struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc // ends this process (SIGTERM, then SIGKILL)
	stdin  io.WriteCloser
	stdout *os.File // our read end; the child holds the write end
	stderr *tailBuffer

	lines       chan []byte // stdout lines (nil: one over maxMessageSize); closed at EOF
	eof         bool        // lines is closed
	stopReading chan struct{}
	readerDone  sync.WaitGroup
	stopOnce    sync.Once

	exited  chan struct{} // closed once proc.Wait returned
	waitErr error         // valid after exited is closed

	// garbage is the first stdout line that was not JSON-RPC; Claude Code
	// skips such lines, and so do we, but it explains a server that never
	// answers.
	garbage string
}

// errStdoutClosed: the server closed stdout but did not exit.
var errStdoutClosed = errors.New("closed stdout")

// errLineTooLong: the server wrote a stdout line over maxMessageSize. It
// is said at once, not after the probe's timeout: no answer can follow
// that the probe could read, and the line is not garbage to skip but an
// answer too long to use.
var errLineTooLong = fmt.Errorf("wrote a stdout line longer than %d MiB (the probe's bound for one message)", maxMessageMiB)

// exitError: the server exited before answering.
type exitError struct{ err error }

func (e *exitError) Error() string { return "exited (" + proc.ExitDescription(e.err) + ")" }

func startStdio(ctx context.Context, srv *mcpconfig.Server, opts Options) (*stdioServer, error) {
	env := serverEnviron(opts.Environ, srv.Env, opts.InheritEnviron)
	if opts.Cwd != "" {
		// exec reports a missing working folder as a missing program;
		// say which one it is.
		if fi, err := os.Stat(opts.Cwd); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("working folder %s does not exist or is not a folder", opts.Cwd)
		}
	}
	path, err := resolveCommand(srv.Command, env, opts.Cwd)
	if err != nil {
		return nil, err
	}
	// A context of its own: a respawn stops this process, not the probe.
	ctx, cancel := context.WithCancel(ctx)
	cmd := proc.Command(ctx, env, stopGrace, path, srv.Args...)
	cmd.Args[0] = srv.Command
	cmd.Env = env
	cmd.Dir = opts.Cwd

	s := &stdioServer{
		cmd:         cmd,
		cancel:      cancel,
		stderr:      &tailBuffer{max: stderrTailSize},
		lines:       make(chan []byte),
		stopReading: make(chan struct{}),
		exited:      make(chan struct{}),
	}
	cmd.Stderr = s.stderr
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		cancel()
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	// Our own pipe rather than StdoutPipe: exec closes StdoutPipe as soon
	// as the process exits, which could drop a last line still unread.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		s.stdin.Close()
		cancel()
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	cmd.Stdout = stdoutW
	if err := proc.Start(cmd); err != nil {
		s.stdin.Close()
		stdoutR.Close()
		stdoutW.Close()
		cancel()
		return nil, err
	}
	stdoutW.Close()
	s.stdout = stdoutR

	go func() {
		s.waitErr = proc.Wait(cmd)
		close(s.exited)
	}()
	s.readerDone.Add(1)
	go func() {
		defer s.readerDone.Done()
		readLines(stdoutR, s.lines, s.stopReading)
	}()
	return s, nil
}

// stop closes stdin, SIGTERMs the process group, SIGKILLs it stopGrace
// later, and waits for every goroutine of the probe to end.
// Stopping twice (a failed respawn leaves the stopped process current) is
// a no-op.
func (s *stdioServer) stop() {
	s.stopOnce.Do(func() {
		s.stdin.Close()
		s.cancel() // proc.Prepare turns this into SIGTERM, then SIGKILL after the grace
		<-s.exited
		close(s.stopReading)
		s.stdout.Close()
		s.readerDone.Wait()
	})
}

func (s *stdioServer) call(ctx context.Context, id int64, method string, params any) (*message, error) {
	// A failed write means the server is gone or closed stdin; what stdout
	// and the exit status say next explains it better than EPIPE.
	_ = s.send(encodeRequest(id, method, params))
	return s.await(ctx, id)
}

// await reads stdout until a response answers one of ids, skipping
// notifications, other answers and lines that are not JSON-RPC.
func (s *stdioServer) await(ctx context.Context, ids ...int64) (*message, error) {
	if s.eof {
		return nil, s.awaitExit(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case line, ok := <-s.lines:
			if !ok {
				s.eof = true
				return nil, s.awaitExit(ctx)
			}
			if line == nil {
				return nil, errLineTooLong
			}
			msgs, ok := parseMessages(line)
			if !ok {
				if s.garbage == "" && len(strings.TrimSpace(string(line))) > 0 {
					s.garbage = clip(string(line), 120)
				}
				continue
			}
			for i := range msgs {
				for _, id := range ids {
					if msgs[i].answers(id) {
						return &msgs[i], nil
					}
				}
			}
		}
	}
}

func (s *stdioServer) notify(ctx context.Context, method string) error {
	return s.send(encodeNotification(method))
}

func (s *stdioServer) setProtocolVersion(string) {}

func (s *stdioServer) send(msg []byte) error {
	_, err := s.stdin.Write(append(msg, '\n'))
	return err
}

// awaitExit is called at stdout EOF: the process is usually exiting.
func (s *stdioServer) awaitExit(ctx context.Context) error {
	select {
	case <-s.exited:
		return &exitError{s.waitErr}
	case <-ctx.Done():
		return errStdoutClosed
	}
}

// failure turns a handshake error into a verdict, once the server is gone
// and its stderr complete.
func (s *stdioServer) failure(err error, timeout time.Duration, secrets []string) Result {
	var what string
	var exit *exitError
	switch {
	case errors.As(err, &exit):
		what = exit.Error() + " before answering initialize"
	case errors.Is(err, errStdoutClosed):
		what = "closed stdout without answering initialize"
	case errors.Is(err, errLineTooLong):
		res := Result{Verdict: NotMCP, Tools: -1, Reason: err.Error() + " instead of answering the handshake"}
		if tail := s.stderr.tail(); tail != "" {
			res.Reason += ": " + tail
		}
		res.Reason = scrub(res.Reason, secrets...)
		return res
	case errors.Is(err, context.DeadlineExceeded):
		what = fmt.Sprintf("no answer to initialize within %s (hang)", timeout)
	case errors.Is(err, context.Canceled):
		what = "probe cancelled before initialize was answered"
	default:
		what = err.Error()
	}
	res := Result{Verdict: Transport, Tools: -1}
	if errors.Is(err, context.DeadlineExceeded) && s.garbage == "" {
		res.TimedOutAfter = timeout
	}
	if s.garbage != "" {
		// Something answered, but not with JSON-RPC: a CLI that is not an
		// MCP server, or one that talks on the wrong stream.
		res.Verdict = NotMCP
		what = fmt.Sprintf("printed non-JSON-RPC output %q on stdout and %s", s.garbage, what)
	}
	if tail := s.stderr.tail(); tail != "" {
		what += ": " + tail
	} else if exit != nil {
		what += " (no stderr output)"
	}
	res.Reason = scrub(what, secrets...)
	return res
}

// readLines sends each stdout line to out until EOF or stop. A line longer
// than maxMessageSize is sent as nil as soon as it passes the bound, and
// the rest of it is read and dropped.
func readLines(r io.Reader, out chan<- []byte, stop <-chan struct{}) {
	defer close(out)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		var line []byte
		var err error
		tooLong := false
		for {
			var frag []byte
			frag, err = br.ReadSlice('\n')
			switch {
			case tooLong:
			case len(line)+len(frag) > maxMessageSize:
				tooLong, line = true, nil
				select {
				case out <- nil:
				case <-stop:
					return
				}
			default:
				line = append(line, frag...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if len(line) > 0 {
			select {
			case out <- line:
			case <-stop:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// resolveCommand finds a bare command name in the PATH of the server's
// environment, not nightwatch's: Claude Code (Node's spawn) does the same,
// and a config may set its own PATH.
func resolveCommand(name string, env []string, cwd string) (string, error) {
	if runtime.GOOS == "windows" {
		// PATHEXT, "Path" in any case, "\" and drive letters, no
		// execute bit: as Claude Code finds npx as npx.cmd.
		return command.FindWindows(name, command.Env{GOOS: "windows",
			Path: envValueFold(env, "PATH"), PathExt: envValueFold(env, "PATHEXT"), ComSpec: envValueFold(env, "COMSPEC")})
	}
	if strings.ContainsRune(name, '/') {
		return name, nil
	}
	for _, dir := range filepath.SplitList(envValue(env, "PATH")) {
		if dir == "" {
			dir = "."
		}
		path := filepath.Join(dir, name)
		if !filepath.IsAbs(path) {
			// A relative PATH entry is relative to the server's cwd.
			if cwd != "" {
				path = filepath.Join(cwd, path)
			} else if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
		}
		if isExecutable(path) {
			return path, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in the server's PATH", name)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// envValueFold is envValue with the name matched without case, as
// Windows reads its environment.
func envValueFold(env []string, name string) string {
	value := ""
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, name) {
			value = v
		}
	}
	return value
}

func envValue(env []string, name string) string {
	value := ""
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			value = v // the last one wins, as in exec
		}
	}
	return value
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	lost bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.lost = true
	}
	return len(p), nil
}

// tail returns the kept output as one line: non-empty lines joined with
// " | ", without the first line when the buffer cut it.
func (t *tailBuffer) tail() string {
	t.mu.Lock()
	text, lost := string(t.buf), t.lost
	t.mu.Unlock()
	lines := strings.Split(strings.ReplaceAll(text, "\r", ""), "\n")
	if lost && len(lines) > 1 {
		lines = lines[1:]
	}
	var kept []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			kept = append(kept, l)
		}
	}
	out := strings.Join(kept, " | ")
	if lost {
		out = "…" + out
	}
	return out
}
