package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerName is the serverInfo.name the test server reports.
const ServerName = "nw-test-server"

// ToolNames lists the test server's tools, in the order they are added.
var ToolNames = []string{"echo", "fail", "rpcerr", "die", "quit", "break", "hang", "env", "slow", "record", "peek", "stall"}

// Options tune the MCP server.
type Options struct {
	// Exit ends the process for the die tool. Nil makes die return a tool
	// error instead: an in-process server must not exit the test binary.
	Exit func(code int)
	// ControlFile is the file the server's mode is read from; the break
	// tool writes a fault into it, so the server stays down until someone
	// (a reconnect command in the tests) writes it healthy again.
	ControlFile string
	// ExitAfterAnswer, when the transport can tell (stdio), ends the
	// process with code right after the next message is written: the quit
	// tool's answer, so the process is gone before any later call can
	// reach it, whatever the load.
	ExitAfterAnswer func(code int)
}

type breakIn struct {
	Mode string `json:"mode,omitempty" jsonschema:"mode to write to the control file, default exit-at-start"`
}

type echoIn struct {
	Message string `json:"message" jsonschema:"text to send back"`
}

type failIn struct {
	Text string `json:"text" jsonschema:"the error text the tool returns"`
}

type dieIn struct {
	Code int `json:"code,omitempty" jsonschema:"exit status, default 3"`
}

type envIn struct {
	Name string `json:"name" jsonschema:"environment variable to read"`
}

type slowIn struct {
	Ms int `json:"ms" jsonschema:"milliseconds to sleep before answering"`
}

type noIn struct{}

type recordIn struct {
	File string `json:"file" jsonschema:"file the text is appended to"`
	Text string `json:"text" jsonschema:"the line to append"`
}

type fileIn struct {
	File string `json:"file" jsonschema:"the file"`
}

type quitIn struct {
	Code int `json:"code,omitempty" jsonschema:"exit status, default 3"`
	Ms   int `json:"ms,omitempty" jsonschema:"milliseconds between the answer and the exit, default 200"`
	// AfterAnswer exits as soon as the answer is written (stdio only),
	// instead of after Ms.
	AfterAnswer bool `json:"after_answer,omitempty" jsonschema:"exit right after the answer is written (stdio)"`
}

// NewServer returns an MCP server with the test tools:
//
//	echo {message}  returns message
//	fail {text}     returns a tool result with isError and text
//	rpcerr          fails with a JSON-RPC error (untyped handler returning an error)
//	die {code}      exits the process mid-call (stdio)
//	quit {code, ms} answers, then exits the process ms later (stdio): a server
//	                that dies between calls
//	hang            never returns until the call is cancelled
//	env {name}      returns the value of an environment variable
//	slow {ms}       sleeps ms milliseconds, then answers
//	break {mode}    writes mode (default exit-at-start) to the control file, then exits
//	record {file, text}  appends text and a newline to file: a side effect (no annotations)
//	peek {file}     returns file's content; annotated readOnlyHint
//	stall {file}    the first call (file does not exist) creates file and hangs like hang;
//	                later calls answer at once
//
// hangBound is how long the hang tool waits at most: far beyond every
// tool timeout a test sets (2–8 s), short enough that a lost cancellation
// cannot stall a test run.
const hangBound = 30 * time.Second

// stallBound bounds the stall tool's first call: past the job timeouts of
// the tests that let a session be killed while it waits (45 s).
const stallBound = 3 * time.Minute

func NewServer(opts Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: "0.0.1"}, nil)

	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its message."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text(in.Message), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Returns a tool error with the given text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			res := text(in.Text)
			res.IsError = true
			return res, nil, nil
		})
	// The untyped handler turns a Go error into a JSON-RPC error, where
	// mcp.AddTool would make it an isError result.
	// Its optional "message" is the error's whole message.
	s.AddTool(&mcp.Tool{Name: "rpcerr", Description: "Fails with a JSON-RPC error.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Message string `json:"message"`
			}
			if req.Params != nil && len(req.Params.Arguments) > 0 {
				_ = json.Unmarshal(req.Params.Arguments, &in)
			}
			if in.Message != "" {
				return nil, errors.New(in.Message)
			}
			return nil, errors.New("rpcerr: the tool failed on purpose")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "die", Description: "Exits the server process mid-call."},
		func(_ context.Context, _ *mcp.CallToolRequest, in dieIn) (*mcp.CallToolResult, any, error) {
			if opts.Exit == nil {
				return nil, nil, errors.New("die: this server runs in-process and cannot exit")
			}
			code := in.Code
			if code == 0 {
				code = 3
			}
			fmt.Fprintf(os.Stderr, "nwtestserver: die: exiting with status %d\n", code)
			opts.Exit(code)
			return nil, nil, errors.New("die: still alive")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "quit", Description: "Answers, then exits the server process."},
		func(_ context.Context, _ *mcp.CallToolRequest, in quitIn) (*mcp.CallToolResult, any, error) {
			if opts.Exit == nil {
				return nil, nil, errors.New("quit: this server runs in-process and cannot exit")
			}
			code, ms := in.Code, in.Ms
			if code == 0 {
				code = 3
			}
			if in.AfterAnswer && opts.ExitAfterAnswer != nil {
				fmt.Fprintf(os.Stderr, "nwtestserver: quit: exiting with status %d after this answer\n", code)
				opts.ExitAfterAnswer(code)
				return text(fmt.Sprintf("bye (exiting with status %d after this answer)", code)), nil, nil
			}
			if ms <= 0 {
				ms = 200
			}
			go func() {
				time.Sleep(time.Duration(ms) * time.Millisecond)
				fmt.Fprintf(os.Stderr, "nwtestserver: quit: exiting with status %d\n", code)
				opts.Exit(code)
			}()
			return text(fmt.Sprintf("bye (exiting with status %d in %dms)", code, ms)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "break", Description: "Breaks the server for good: writes a fault to its control file and exits."},
		func(_ context.Context, _ *mcp.CallToolRequest, in breakIn) (*mcp.CallToolResult, any, error) {
			if opts.ControlFile == "" || opts.Exit == nil {
				return nil, nil, errors.New("break: needs --control and a process of its own")
			}
			mode := in.Mode
			if mode == "" {
				mode = "exit-at-start"
			}
			if err := os.WriteFile(opts.ControlFile, []byte(mode+"\n"), 0o600); err != nil {
				return nil, nil, err
			}
			fmt.Fprintf(os.Stderr, "nwtestserver: break: wrote %q to %s and exits\n", mode, opts.ControlFile)
			opts.Exit(3)
			return nil, nil, errors.New("break: still alive")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
			// Bounded all the same: go-sdk's SSE session waits for its
			// in-flight handlers when it closes, and a client's
			// cancellation can lose the race with its own close, which
			// would keep a test server (and its test) waiting forever.
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(hangBound):
				return nil, nil, errors.New("hang: gave up after " + hangBound.String())
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Returns the value of an environment variable."},
		func(_ context.Context, _ *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, any, error) {
			value, ok := os.LookupEnv(in.Name)
			if !ok {
				res := text(in.Name + " is not set")
				res.IsError = true
				return res, nil, nil
			}
			return text(value), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Sleeps, then answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
				return text(fmt.Sprintf("slept %dms", in.Ms)), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "record", Description: "Appends a line to a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, in recordIn) (*mcp.CallToolResult, any, error) {
			f, err := os.OpenFile(in.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return nil, nil, err
			}
			defer f.Close()
			if _, err := fmt.Fprintln(f, in.Text); err != nil {
				return nil, nil, err
			}
			return text("recorded " + in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "peek", Description: "Returns a file's content.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in fileIn) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile(in.File)
			if err != nil {
				return nil, nil, err
			}
			return text("content: " + string(b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "stall", Description: "Hangs the first time, answers afterwards."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in fileIn) (*mcp.CallToolResult, any, error) {
			if _, err := os.Stat(in.File); err == nil {
				return text("not stalling: " + in.File + " exists"), nil, nil
			}
			if err := os.WriteFile(in.File, nil, 0o600); err != nil {
				return nil, nil, err
			}
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(stallBound):
				return nil, nil, errors.New("stall: gave up after " + stallBound.String())
			}
		})
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
