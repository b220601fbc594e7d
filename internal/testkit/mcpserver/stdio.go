package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MethodDiscover is the 2026-07-28 era probe Claude Code 2.1.332 sends
// before initialize.
const MethodDiscover = "server/discover"

// NoisyLine is what noisy-stdout prints on stdout before serving.
const NoisyLine = "hello from server"

// MissingKeyMessage is what exit-during-handshake prints on stderr: the
// article's server that crashed in the handshake for want of an API key.
const MissingKeyMessage = "Error: NOTES_API_KEY is not set"

// StdioConfig wires ServeStdio to a process.
type StdioConfig struct {
	Modes  ModeSource
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Exit ends the process (exit-at-start, exit-during-handshake,
	// require-env, the die tool).
	Exit func(code int)
	// ControlFile is passed to the server for its break tool.
	ControlFile string
}

var errExited = errors.New("mcpserver: exit requested")

// ServeStdio serves MCP as newline-delimited JSON on Stdin and Stdout,
// injecting the faults of cfg.Modes: the start-up ones once, the handshake
// ones on every message read (the mode is asked again each time).
func ServeStdio(ctx context.Context, cfg StdioConfig) error {
	mode := cfg.Modes()
	if mode.ExitAtStart {
		fmt.Fprintln(cfg.Stderr, "nwtestserver: fatal: exit-at-start: refusing to start")
		return exit(cfg, 1)
	}
	if mode.SlowStart > 0 {
		select {
		case <-time.After(mode.SlowStart):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// The SDK and the fault filter both write to stdout; one message per
	// Write, never interleaved.
	out := &lockedWriter{w: cfg.Stdout}
	if mode.NoisyStdout {
		fmt.Fprintln(out, NoisyLine)
	}

	toServer, fromFilter := io.Pipe()
	srv := NewServer(Options{Exit: cfg.Exit, ControlFile: cfg.ControlFile,
		ExitAfterAnswer: func(code int) { out.exitAfterNextWrite(func() { _ = exit(cfg, code) }) }})
	served := make(chan error, 1)
	go func() {
		served <- srv.Run(ctx, &mcp.IOTransport{Reader: toServer, Writer: nopCloser{out}})
	}()

	err := filterStdin(cfg, out, fromFilter)
	if err != nil {
		fromFilter.CloseWithError(err)
		<-served
		return err
	}
	// stdin is at EOF. A well-behaved server exits; these do not.
	if m := cfg.Modes(); m.NeverAnswer || m.Linger {
		<-ctx.Done()
		fromFilter.Close()
		<-served
		return ctx.Err()
	}
	fromFilter.Close()
	return <-served
}

// filterStdin passes stdin lines to the SDK server unless the current mode
// says to drop them, crash on them or answer them itself.
func filterStdin(cfg StdioConfig, out io.Writer, toServer io.Writer) error {
	warm := false // slow-handshake's warm-up is over
	lines := bufio.NewScanner(cfg.Stdin)
	lines.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for lines.Scan() {
		line := lines.Bytes()
		mode := cfg.Modes()
		if mode.NeverAnswer {
			continue
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(line, &req) // garbage goes to the SDK, which copes
		handshake := req.Method == "initialize" || req.Method == MethodDiscover
		if handshake {
			switch {
			case mode.ExitDuringHandshake:
				fmt.Fprintln(cfg.Stderr, MissingKeyMessage)
				return exit(cfg, 1)
			case mode.RequireEnv != "" && os.Getenv(mode.RequireEnv) == "":
				fmt.Fprintf(cfg.Stderr, "Error: %s is not set\n", mode.RequireEnv)
				return exit(cfg, 1)
			}
			if mode.SlowHandshake > 0 && !warm {
				// stdin is read in order: what arrives meanwhile waits too.
				time.Sleep(mode.SlowHandshake)
			}
			warm = true
		}
		if req.Method == MethodDiscover {
			switch {
			case mode.DieOnDiscover:
				fmt.Fprintln(cfg.Stderr, "nwtestserver: die-on-discover: exiting on server/discover")
				return exit(cfg, 1)
			case mode.IgnoreDiscover:
				continue
			case mode.Legacy:
				if _, err := out.Write(methodNotFound(req.ID, req.Method)); err != nil {
					return err
				}
				continue
			}
		}
		if req.Method == "tools/call" && mode.AnswerTask {
			if _, err := out.Write(taskAccepted(req.ID)); err != nil {
				return err
			}
			continue
		}
		if req.Method == "initialize" && mode.DiscoverOnly {
			if _, err := out.Write(methodNotFound(req.ID, req.Method)); err != nil {
				return err
			}
			continue
		}
		if _, err := toServer.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return lines.Err()
}

// methodNotFound is the answer of a server that does not know method, one
// line of JSON-RPC.
func methodNotFound(id json.RawMessage, method string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": -32601, "message": "Method not found: " + method},
	})
	return append(b, '\n')
}

// TaskID is the id of the task answer-task answers with.
const TaskID = "nw-task-1"

// taskAccepted is a tools/call answer that turned the call into a task
// (the io.modelcontextprotocol/tasks extension), one line of JSON-RPC.
func taskAccepted(id json.RawMessage) []byte {
	now := time.Now().UTC().Format(time.RFC3339)
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"result": map[string]any{"resultType": "task", "taskId": TaskID, "status": "working",
			"createdAt": now, "lastUpdatedAt": now, "ttlMs": 600000, "pollIntervalMs": 1000,
			"statusMessage": "nwtestserver: working on it"},
	})
	return append(b, '\n')
}

func exit(cfg StdioConfig, code int) error {
	if cfg.Exit != nil {
		cfg.Exit(code)
	}
	return errExited
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
	// then runs once, right after the next Write (held under mu: nothing
	// else is written in between).
	then func()
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if then := l.then; then != nil {
		l.then = nil
		then()
	}
	return n, err
}

// exitAfterNextWrite makes f run right after the next message is written.
func (l *lockedWriter) exitAfterNextWrite(f func()) {
	l.mu.Lock()
	l.then = f
	l.mu.Unlock()
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
