//go:build linux

package serverguard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/internal/testkit"
	"github.com/nightwatch-dev/nightwatch/internal/testkit/mcpserver"
)

// client plays Claude Code against a guarded nwtestserver: it writes
// requests on the guard's stdin and reads every line of its stdout.
type client struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  chan map[string]any
	eof    chan struct{}
	nextID int

	mu     sync.Mutex
	events []Event
	done   chan error
}

func guarded(t *testing.T, cfg Config) *client {
	t.Helper()
	bin := testkit.BuildTestServer(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, in: inW, lines: make(chan map[string]any, 64), eof: make(chan struct{}), done: make(chan error, 1)}
	cfg.Server = "notes"
	if cfg.Argv == nil {
		cfg.Argv = []string{bin}
	}
	cfg.Env = append(cfg.Env, "PATH="+os.Getenv("PATH"))
	cfg.Notify = func(ev Event) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.events = append(c.events, ev)
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 20 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { c.done <- Run(ctx, cfg, inR, outW); outW.Close() }()
	go func() {
		defer close(c.eof)
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Errorf("the guard wrote a line that is not JSON: %q", line)
				continue
			}
			c.lines <- m
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return after the client left")
		}
	})
	return c
}

func (c *client) send(v map[string]any) {
	c.t.Helper()
	v["jsonrpc"] = "2.0"
	b, _ := json.Marshal(v)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write to the guard: %v", err)
	}
}

// request sends method and waits for the answer to it; any other line is
// a failure (the guard must not leak its own traffic).
func (c *client) request(method string, params any) map[string]any {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	c.send(map[string]any{"id": id, "method": method, "params": params})
	return c.answer(id)
}

func (c *client) answer(id int) map[string]any {
	c.t.Helper()
	for {
		select {
		case m := <-c.lines:
			if m["id"] == float64(id) {
				return m
			}
			if _, isNote := m["method"]; isNote && m["id"] == nil {
				continue // a server's notification
			}
			c.t.Fatalf("unexpected line %v while waiting for the answer to %d", m, id)
		case <-c.eof:
			c.t.Fatalf("the guard closed its output while request %d was outstanding", id)
		case <-time.After(60 * time.Second):
			c.t.Fatalf("no answer to request %d", id)
		}
	}
}

func (c *client) handshake() {
	c.t.Helper()
	res := c.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}})
	if res["error"] != nil {
		c.t.Fatalf("initialize: %v", res["error"])
	}
	c.send(map[string]any{"method": "notifications/initialized"})
}

func (c *client) call(tool string, args map[string]any) map[string]any {
	c.t.Helper()
	return c.request("tools/call", map[string]any{"name": tool, "arguments": args})
}

// echoes says whether an answer is the echo tool's text want.
func echoes(m map[string]any, want string) bool {
	b, _ := json.Marshal(m["result"])
	return m["error"] == nil && strings.Contains(string(b), want)
}

func (c *client) starts() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Event
	for _, ev := range c.events {
		if ev.Kind == Started {
			out = append(out, ev)
		}
	}
	return out
}

func (c *client) eventsOf(k EventKind) []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Event
	for _, ev := range c.events {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

func (c *client) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("waited in vain for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *client) currentPID() int {
	s := c.starts()
	if len(s) == 0 {
		c.t.Fatal("no server started")
	}
	return s[len(s)-1].PID
}

func errorText(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// Killed between calls: the next call is answered by a fresh process
// after a replayed handshake (the go-sdk server refuses tools/call before
// initialize and notifications/initialized), and the client never sees
// the pipe close.
func TestKilledBetweenCallsIsRestartedUnderTheClient(t *testing.T) {
	c := guarded(t, Config{})
	c.handshake()
	if r := c.call("echo", map[string]any{"message": "one"}); !echoes(r, "one") {
		t.Fatalf("first call: %v", r)
	}
	first := c.currentPID()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.waitFor("a second start", func() bool { return len(c.starts()) == 2 })
	if r := c.call("echo", map[string]any{"message": "two"}); !echoes(r, "two") {
		t.Fatalf("call after the restart: %v", r)
	}
	if second := c.currentPID(); second == first {
		t.Errorf("the second call was answered by pid %d, the killed one", second)
	}
	re := c.eventsOf(Restarted)
	if len(re) != 1 || !strings.Contains(re[0].Reason, "killed") {
		t.Errorf("restarts = %+v, want one, killed", re)
	}
	select {
	case <-c.eof:
		t.Fatal("the client saw the pipe close")
	case err := <-c.done:
		t.Fatalf("Run ended: %v", err)
	default:
	}
}

// Killed during a call: that call gets the restart error with its id,
// never a silent replay; the next call is answered.
func TestCallInFlightGetsTheRestartError(t *testing.T) {
	c := guarded(t, Config{})
	c.handshake()
	r := c.call("die", map[string]any{"code": 7})
	if msg := errorText(r); !strings.Contains(msg, RestartedMarker) || !strings.Contains(msg, "exited with code 7") ||
		!strings.Contains(msg, "not repeated") || !strings.Contains(msg, "handles") {
		t.Fatalf("the call in flight got %v, want the restart error", r)
	}
	if r := c.call("echo", map[string]any{"message": "after"}); !echoes(r, "after") {
		t.Fatalf("call after the restart: %v", r)
	}
	if n := len(c.starts()); n != 2 {
		t.Errorf("%d starts, want 2 (the die call must not be replayed)", n)
	}
}

// The error of a call in flight ends with whether it can be made again,
// from its tool's hints (Config.Hints), at a restart and at a loss alike.
func TestInFlightWordingFollowsTheHints(t *testing.T) {
	yes := true
	const again, check = "the call can be made again.", "it may have taken effect: check before repeating it."
	tests := []struct {
		name     string
		restarts int
		hints    func(string) effects.Hints
		marker   string
		want     string
	}{
		{"restart, idempotent", 0, func(tool string) effects.Hints {
			if tool == "die" {
				return effects.Hints{Idempotent: &yes}
			}
			return effects.Hints{}
		}, RestartedMarker, again},
		{"restart, no hints", 0, nil, RestartedMarker, check},
		{"restart, another tool's hints", 0, func(tool string) effects.Hints {
			if tool == "echo" {
				return effects.Hints{Idempotent: &yes}
			}
			return effects.Hints{}
		}, RestartedMarker, check},
		{"loss, idempotent", -1, func(string) effects.Hints { return effects.Hints{ReadOnly: &yes} }, "could not be brought back", again},
		{"loss, no hints", -1, nil, "could not be brought back", check},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := guarded(t, Config{Restarts: tt.restarts, Hints: tt.hints})
			c.handshake()
			msg := errorText(c.call("die", nil))
			if !strings.Contains(msg, tt.marker) || !strings.HasSuffix(msg, tt.want) || !strings.Contains(msg, "did not complete") {
				t.Errorf("the call in flight got %q, want %q … %q", msg, tt.marker, tt.want)
			}
		})
	}
}

// A hung process (SIGSTOP) is found by its unanswered ping, killed with
// its group and started again.
func TestHungServerIsRestarted(t *testing.T) {
	c := guarded(t, Config{HangAfter: 200 * time.Millisecond, PingTimeout: 300 * time.Millisecond})
	c.handshake()
	if r := c.call("echo", map[string]any{"message": "one"}); !echoes(r, "one") {
		t.Fatalf("first call: %v", r)
	}
	pid := c.currentPID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the server to stop", func() bool { return processState(pid) == "T" })
	r := c.call("echo", map[string]any{"message": "lost"})
	if msg := errorText(r); !strings.Contains(msg, RestartedMarker) || !strings.Contains(msg, "hung") {
		t.Fatalf("the call to the hung server (pid %d) got %v, want the restart error saying it hung; events %+v", pid, r, c.events)
	}
	if r := c.call("echo", map[string]any{"message": "two"}); !echoes(r, "two") {
		t.Fatalf("call after the restart: %v", r)
	}
	re := c.eventsOf(Restarted)
	if len(re) != 1 || !strings.Contains(re[0].Reason, "hung") {
		t.Errorf("restarts = %+v, want one for a hang", re)
	}
}

// A server that answers nothing, not even a ping, while it runs a long
// call is restarted under a hang bound, and left to finish with the hang
// check off (a server's restart: {hang_after: off}).
func TestHangBoundOff(t *testing.T) {
	tests := []struct {
		name      string
		hangAfter time.Duration
		restarted bool
	}{
		{"hang bound", 50 * time.Millisecond, true},
		{"hang check off", -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := guarded(t, Config{HangAfter: tt.hangAfter, PingTimeout: 100 * time.Millisecond})
			c.handshake()
			pid := c.currentPID()
			// SIGSTOP: the server answers nothing until SIGCONT.
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			c.waitFor("the server to stop", func() bool { return processState(pid) == "T" })
			c.nextID++
			id := c.nextID
			c.send(map[string]any{"id": id, "method": "tools/call", "params": map[string]any{"name": "echo", "arguments": map[string]any{"message": "long"}}})
			if tt.restarted {
				if r := c.answer(id); !strings.Contains(errorText(r), RestartedMarker) {
					t.Fatalf("the call to the stopped server got %v, want the restart error", r)
				}
				return
			}
			// Many ticks of a 50 ms bound pass; nothing may kill it.
			time.Sleep(time.Second)
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			if r := c.answer(id); !echoes(r, "long") {
				t.Fatalf("the long call got %v, want its answer", r)
			}
			if re := c.eventsOf(Restarted); len(re) != 0 || c.currentPID() != pid {
				t.Errorf("restarts = %+v (pid %d, was %d), want none", re, c.currentPID(), pid)
			}
		})
	}
}

// A slow call whose server answers pings is not a hang.
func TestSlowCallIsNotAHang(t *testing.T) {
	// The call outlasts the ping bound several times over, so pings are
	// sent and answered during it; a bound of 200 ms was missed by a busy
	// machine's answer to a ping.
	c := guarded(t, Config{HangAfter: 50 * time.Millisecond, PingTimeout: 1500 * time.Millisecond})
	c.handshake()
	if r := c.call("slow", map[string]any{"ms": 6000}); !echoes(r, "slept 6000ms") {
		t.Fatalf("slow call: %v", r)
	}
	if re := c.eventsOf(Restarted); len(re) != 0 {
		t.Errorf("restarts = %+v, want none", re)
	}
}

// Requests that arrive while the server restarts are held, then sent to
// the new process in order.
func TestRequestsDuringTheRestartAreHeld(t *testing.T) {
	c := guarded(t, Config{Backoff: 300 * time.Millisecond})
	c.handshake()
	r := c.call("die", nil)
	if !strings.Contains(errorText(r), RestartedMarker) {
		t.Fatalf("die: %v", r)
	}
	// The restart waits 300 ms: these arrive before the new process.
	for i := range 3 {
		c.send(map[string]any{"id": 100 + i, "method": "tools/call", "params": map[string]any{"name": "echo", "arguments": map[string]any{"message": fmt.Sprint("held", i)}}})
	}
	// The server answers concurrently: in any order.
	got := map[float64]map[string]any{}
	for len(got) < 3 {
		select {
		case m := <-c.lines:
			got[m["id"].(float64)] = m
		case <-time.After(60 * time.Second):
			t.Fatalf("answers so far: %v", got)
		}
	}
	for i := range 3 {
		if r := got[float64(100+i)]; !echoes(r, fmt.Sprint("held", i)) {
			t.Errorf("held call %d: %v", i, r)
		}
	}
}

// Restarts beyond the bound give the server up: Run ends with ErrLost, the
// loss is told, and the output closes.
func TestRestartsExhaustedLoseTheServer(t *testing.T) {
	c := guarded(t, Config{Restarts: 2})
	c.handshake()
	for i := range 2 {
		if r := c.call("die", nil); !strings.Contains(errorText(r), RestartedMarker) {
			t.Fatalf("die %d: %v", i, r)
		}
	}
	r := c.call("die", nil)
	if msg := errorText(r); !strings.Contains(msg, "could not be brought back") {
		t.Fatalf("the last call got %v, want the loss", r)
	}
	select {
	case err := <-c.done:
		if !errors.Is(err, ErrLost) {
			t.Errorf("Run = %v, want ErrLost", err)
		}
		c.done <- err // for the cleanup
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not end")
	}
	if lost := c.eventsOf(Lost); len(lost) != 1 || !strings.Contains(lost[0].Reason, "restarted 2 times") {
		t.Errorf("lost = %+v", lost)
	}
	select {
	case <-c.eof:
	case <-time.After(30 * time.Second):
		t.Error("the output stayed open")
	}
}

// A server that never answered is not repaired: Claude Code sees it fail
// at start, as without nightwatch.
func TestServerThatNeverAnsweredIsNotRestarted(t *testing.T) {
	c := guarded(t, Config{Argv: []string{testkit.BuildTestServer(t), "--mode", "exit-during-handshake"}})
	c.nextID++
	c.send(map[string]any{"id": c.nextID, "method": "initialize", "params": map[string]any{}})
	select {
	case err := <-c.done:
		if !errors.Is(err, ErrEndedAtStart) {
			t.Errorf("Run = %v, want ErrEndedAtStart", err)
		}
		c.done <- err
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not end")
	}
	if n := len(c.starts()); n != 1 {
		t.Errorf("%d starts, want 1", n)
	}
}

// processState is the state letter of pid in /proc ("" when unknown).
func processState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}

// A request the client cancelled is owed nothing: a server that does not
// answer it (as the protocol allows) is not taken for hung.
func TestCancelledRequestIsNoHang(t *testing.T) {
	c := guarded(t, Config{HangAfter: 100 * time.Millisecond, PingTimeout: 200 * time.Millisecond})
	c.handshake()
	pid := c.currentPID()
	c.nextID++
	c.send(map[string]any{"id": c.nextID, "method": "tools/call", "params": map[string]any{"name": "hang", "arguments": map[string]any{}}})
	c.send(map[string]any{"method": "notifications/cancelled", "params": map[string]any{"requestId": c.nextID, "reason": "timed out"}})
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the server to stop", func() bool { return processState(pid) == "T" })
	// Ten hang bounds with nothing owed: no ping, no restart.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if re := c.eventsOf(Restarted); len(re) != 0 {
			t.Fatalf("restarted with nothing outstanding: %+v", re)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancelled := c.nextID
	_ = syscall.Kill(pid, syscall.SIGCONT)
	c.nextID++
	c.send(map[string]any{"id": c.nextID, "method": "tools/call", "params": map[string]any{"name": "echo", "arguments": map[string]any{"message": "still"}}})
	for {
		select {
		case m := <-c.lines:
			if m["id"] == float64(cancelled) {
				continue // the go-sdk answers a cancelled call all the same
			}
			if !echoes(m, "still") {
				t.Fatalf("call after: %v", m)
			}
			return
		case <-time.After(60 * time.Second):
			t.Fatal("no answer after SIGCONT")
		}
	}
}

// TestServerAnswersAreTold: a tools/call the server itself answers with a
// failure (an isError result, a JSON-RPC error) is told to Notify with
// its tool and the client's tool_use_id (params._meta
// "claudecode/toolUseId"), before the answer reaches the client; a
// success, and a call without a tool_use_id, are not.
func TestServerAnswersAreTold(t *testing.T) {
	c := guarded(t, Config{})
	c.handshake()
	call := func(tool, id string, args map[string]any) map[string]any {
		params := map[string]any{"name": tool, "arguments": args}
		if id != "" {
			params["_meta"] = map[string]any{"claudecode/toolUseId": id, "progressToken": 7}
		}
		return c.request("tools/call", params)
	}
	tests := []struct {
		tool, id string
		args     map[string]any
		want     *Event
	}{
		{"fail", "toolu_1", map[string]any{"text": "Connection closed"}, &Event{Kind: Answered, Tool: "fail", ToolUseID: "toolu_1", Reason: AnsweredIsError}},
		{"rpcerr", "toolu_2", map[string]any{"message": "Connection closed"}, &Event{Kind: Answered, Tool: "rpcerr", ToolUseID: "toolu_2", Reason: AnsweredError}},
		{"echo", "toolu_3", map[string]any{"message": "hi"}, nil},
		{"fail", "", map[string]any{"text": "no id"}, nil},
		// A result whose text is a task handle is a result.
		{"echo", "toolu_4", map[string]any{"message": `{"resultType":"task","taskId":"t-1","status":"working"}`}, nil},
	}
	for _, tt := range tests {
		before := len(c.eventsOf(Answered))
		res := call(tt.tool, tt.id, tt.args)
		// Told before the answer left: it is there when the answer is read.
		got := c.eventsOf(Answered)[before:]
		switch {
		case tt.want == nil && len(got) != 0:
			t.Errorf("%s %q: told %+v, want nothing", tt.tool, tt.id, got)
		case tt.want != nil && (len(got) != 1 || got[0] != *tt.want):
			t.Errorf("%s %q: told %+v, want %+v (answer %v)", tt.tool, tt.id, got, *tt.want, res)
		}
	}
	if got := c.eventsOf(Tasked); len(got) != 0 {
		t.Errorf("answers that are no task handle told as tasks: %+v", got)
	}
}

// TestServerTasksAreTold: a tools/call the server answers with an MCP task
// handle is told to Notify (Tasked) with its tool, the client's
// tool_use_id and the task's id before the answer, unchanged, reaches the
// client; a call without a tool_use_id is told all the same (the task
// runs whoever asked). Other requests pass as before.
func TestServerTasksAreTold(t *testing.T) {
	c := guarded(t, Config{Argv: []string{testkit.BuildTestServer(t), "--mode", "answer-task"}})
	c.handshake()
	tests := []struct {
		id   string
		want Event
	}{
		{"toolu_1", Event{Kind: Tasked, Tool: "echo", ToolUseID: "toolu_1", TaskID: mcpserver.TaskID}},
		{"", Event{Kind: Tasked, Tool: "echo", TaskID: mcpserver.TaskID}},
	}
	for _, tt := range tests {
		params := map[string]any{"name": "echo", "arguments": map[string]any{"message": "start"}}
		if tt.id != "" {
			params["_meta"] = map[string]any{"claudecode/toolUseId": tt.id}
		}
		before := len(c.eventsOf(Tasked))
		res := c.request("tools/call", params)
		got := c.eventsOf(Tasked)[before:]
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("call %q: told %+v, want %+v", tt.id, got, tt.want)
		}
		r, _ := res["result"].(map[string]any)
		if r["resultType"] != "task" || r["taskId"] != mcpserver.TaskID {
			t.Errorf("call %q: the client got %v, want the server's task answer", tt.id, res)
		}
	}
	if res := c.request("tools/list", map[string]any{}); res["error"] != nil {
		t.Errorf("tools/list: %v", res["error"])
	}
	if got := c.eventsOf(Answered); len(got) != 0 {
		t.Errorf("a task answer told as a failure: %+v", got)
	}
	if got := c.eventsOf(Tasked); len(got) != 2 {
		t.Errorf("%d task events, want 2", len(got))
	}
}
