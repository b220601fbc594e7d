// Package serverguard keeps one stdio MCP server alive under Claude Code:
// `nightwatch exec-server` runs the server as its child and passes
// newline-delimited JSON-RPC between Claude Code (its own stdin and
// stdout) and the child. When the child exits, or hangs (a request
// outstanding too long and a ping unanswered), the guard kills its process
// group, starts it again, replays the client's handshake (initialize and
// notifications/initialized; a 2026-07-28 client's server/discover needs
// nothing replayed) with its own request id, and keeps the pipe to Claude
// Code open, so the CLI never sees the server go.
//
// Nothing is repeated silently: a request that was in flight when the
// server died is answered with a JSON-RPC error that says so (RestartError);
// requests that arrive during the restart are held, bounded, then sent to
// the new process. Restarts are bounded (Config.Restarts within
// Config.Window, with a backoff that doubles); a server that cannot be
// brought back ends Run with ErrLost. Every start, restart and loss is
// told to Config.Notify, for the night's events file, and so is every
// tools/call the server itself answered with a failure (Answered): the
// hook then knows that call's failure is the server's own answer, whatever
// its text says; and every tools/call the server answered with an MCP task
// handle instead of a result (Tasked), which no supported CLI follows.
package serverguard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/proc"
)

// Config is one guarded server.
type Config struct {
	// Server is the server's name in the session's MCP config, for
	// messages and events.
	Server string
	// Argv is the server's command; Env its whole environment.
	Argv []string
	Env  []string
	// Stderr receives the child's stderr (passed through).
	Stderr io.Writer
	// Restarts is how many restarts nightwatch makes within Window before
	// it gives the server up.
	Restarts int
	Window   time.Duration
	// Backoff is the pause before the first restart; each further restart
	// in the window doubles it, up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// HangAfter: a request outstanding this long gets a ping; a ping
	// unanswered for PingTimeout means the server hangs. A negative
	// HangAfter never judges the server hung: one that runs a long call
	// and answers nothing meanwhile, not even a ping, is left to it.
	HangAfter, PingTimeout time.Duration
	// StartTimeout bounds the answer to the replayed initialize.
	StartTimeout time.Duration
	// Held bounds the messages held while the server restarts.
	Held int
	// Grace is the time between asking the server's group to stop and
	// killing it, when the client leaves.
	Grace time.Duration
	// Notify hears every start, restart and loss (nil: nobody).
	Notify func(Event)
	// Hints gives a tool's hints (from the job's side-effect ledger), for
	// the error of a call in flight when the server died: whether it can
	// be made again (nil: no hints, it may have taken effect).
	Hints func(tool string) effects.Hints
}

// Defaults for a zero Config field.
const (
	DefaultRestarts     = 5
	DefaultWindow       = 10 * time.Minute
	DefaultBackoff      = 250 * time.Millisecond
	DefaultMaxBackoff   = 8 * time.Second
	DefaultHangAfter    = 60 * time.Second
	DefaultPingTimeout  = 20 * time.Second
	DefaultStartTimeout = 60 * time.Second
	DefaultHeld         = 256
	DefaultGrace        = 2 * time.Second
)

func (c *Config) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.Restarts < 0 {
		c.Restarts = 0
	} else if c.Restarts == 0 {
		c.Restarts = DefaultRestarts
	}
	set(&c.Window, DefaultWindow)
	set(&c.Backoff, DefaultBackoff)
	set(&c.MaxBackoff, DefaultMaxBackoff)
	if c.HangAfter == 0 {
		c.HangAfter = DefaultHangAfter
	}
	set(&c.PingTimeout, DefaultPingTimeout)
	set(&c.StartTimeout, DefaultStartTimeout)
	set(&c.Grace, DefaultGrace)
	if c.Held <= 0 {
		c.Held = DefaultHeld
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
}

// EventKind is what an Event tells.
type EventKind string

// The kinds of event.
const (
	// Started: a process of the server started (Start counts them within
	// this guard, from 1).
	Started EventKind = "started"
	// Restarted: the server's process ended (Reason how) and nightwatch
	// starts it again.
	Restarted EventKind = "restarted"
	// Lost: the server could not be brought back (Reason why); Run ends.
	Lost EventKind = "lost"
	// Answered: the server itself answered the client's tools/call
	// ToolUseID of Tool with a failure, Reason AnsweredError (a JSON-RPC
	// error) or AnsweredIsError (an isError result). Told before the
	// answer is passed on.
	Answered EventKind = "answered"
	// Tasked: the server answered the client's tools/call ToolUseID of
	// Tool with an MCP task handle (TaskID), not with the call's result:
	// the work runs on at the server. Told before the answer is passed
	// on, whatever the CLI then makes of it (2.1.332 fails the call,
	// 2.1.197 shows an empty success).
	Tasked EventKind = "tasked"
)

// How the server answered a call with a failure (Event.Reason of Answered).
const (
	AnsweredError   = healthcheck.AnsweredError
	AnsweredIsError = healthcheck.AnsweredIsError
)

// Event is one start, restart or loss of the guarded server, or one
// failure it answered a call with.
type Event struct {
	Kind      EventKind
	Start     int
	PID       int
	Reason    string
	Tool      string
	ToolUseID string
	TaskID    string
}

// ErrLost is Run's answer when the server could not be brought back.
var ErrLost = errors.New("the MCP server could not be brought back")

// ErrStart is Run's answer when the server's first process could not
// start.
var ErrStart = errors.New("cannot start the MCP server")

// ErrEndedAtStart is Run's answer when the server ended before it ever
// answered the client: nothing to repair, and nothing lost mid-session.
var ErrEndedAtStart = errors.New("the MCP server ended before it answered")

// RestartedMarker opens the error message of a call that was in flight
// when its server died; the hook reads it as the server's failure
// (healthcheck's classifier).
const RestartedMarker = healthcheck.GuardRestarted

// RestartError is the message of a call that was in flight when its server
// ended (how): one line for the model, ending with whether the call can be
// made again (its tool's hints: effects.Hints.Interrupted).
func RestartError(server, how string, h effects.Hints) string {
	return fmt.Sprintf("%s %q (%s): this call did not complete and was not repeated; "+
		"ids and handles from before the restart may be gone; %s.", RestartedMarker, server, how, h.Interrupted())
}

// LostError is the message of a call that was in flight when its server
// ended for good (why).
func LostError(server, why string, h effects.Hints) string {
	return fmt.Sprintf("nightwatch: MCP server %q could not be brought back (%s): this call did not complete; %s.", server, why, h.Interrupted())
}

// errorCode is the JSON-RPC code of the guard's own errors (the
// implementation-defined server error range).
const errorCode = -32000

// ownPrefix starts the ids of the guard's own requests and of server
// requests it passes on, so they never meet the client's ids.
const ownPrefix = "nightwatch-guard-"

// Run guards the server of cfg between in (from Claude Code) and out (to
// it) until in ends (nil, or the *exec.ExitError of a server that then
// exited with a failure), ctx ends (its error), the server is lost
// (ErrLost), or it could not start or ended before it ever answered
// (ErrStart, ErrEndedAtStart: Claude Code sees that as it would without
// nightwatch). The server's process group is gone when Run returns.
func Run(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	cfg.defaults()
	if len(cfg.Argv) == 0 {
		return errors.New("no server command")
	}
	g := &guard{cfg: cfg, out: out, ctx: ctx,
		events:     make(chan any, 64),
		quit:       make(chan struct{}),
		pending:    map[string]*call{},
		serverReqs: map[string]serverReq{},
	}
	defer close(g.quit)
	go g.readClient(in)
	return g.loop()
}

// call is a client request sent to the current process.
type call struct {
	id     json.RawMessage
	method string
	// tool is a tools/call's tool name and toolUseID the client's id of
	// the call ("" for other methods).
	tool, toolUseID string
	line            []byte
	sent            time.Time
}

// serverReq is a request a process sent the client, under the id the
// guard gave it.
type serverReq struct {
	start int
	id    json.RawMessage
}

type state int

const (
	up        state = iota // requests pass
	handshake              // the replayed initialize is out
	down                   // waiting to restart
)

type guard struct {
	cfg Config
	ctx context.Context
	out io.Writer

	events chan any
	// quit closes when Run returns: the readers stop sending.
	quit chan struct{}

	child *child
	state state
	// served: a process answered the client at least once; before that a
	// dying server is Claude Code's to see (it fails at start, as
	// without nightwatch).
	served bool
	// dying is why the current process is being killed ("" when it is not).
	dying string

	initialize  []byte // the client's initialize request
	initialized []byte // and its notifications/initialized
	pending     map[string]*call
	held        [][]byte
	serverReqs  map[string]serverReq
	nextID      int

	handshakeID string
	deadline    time.Time // of the handshake, or of the restart's pause
	pingID      string
	pingSent    time.Time
	lastAlive   time.Time

	restarts []time.Time
	starts   int
}

// The guard's loop hears these.
type (
	clientLine []byte
	clientEOF  struct{}
	childLine  struct {
		start int
		line  []byte
	}
	childExit struct {
		start int
		err   error
	}
)

// child is one process of the server.
type child struct {
	start int
	cmd   *exec.Cmd
	in    chan []byte
	done  chan struct{}
	// err is how it ended (proc.Wait), set before done closes.
	err error
}

func (g *guard) readClient(in io.Reader) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytesTrim(line)) > 0 && !g.send(clientLine(line)) {
			return
		}
		if err != nil {
			g.send(clientEOF{})
			return
		}
	}
}

// send hands ev to the loop; false once Run has returned.
func (g *guard) send(ev any) bool {
	select {
	case g.events <- ev:
		return true
	case <-g.quit:
		return false
	}
}

func bytesTrim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

func (g *guard) tick() time.Duration {
	d := min(g.cfg.PingTimeout, g.cfg.Backoff, time.Second) / 4
	if g.cfg.HangAfter > 0 {
		d = min(d, g.cfg.HangAfter/4)
	}
	return max(d, 5*time.Millisecond)
}

func (g *guard) loop() error {
	if err := g.start(); err != nil {
		// Claude Code sees it fail at start, as without nightwatch.
		return fmt.Errorf("%w: %w", ErrStart, err)
	}
	ticker := time.NewTicker(g.tick())
	defer ticker.Stop()
	for {
		select {
		case <-g.ctx.Done():
			_ = g.stop()
			return g.ctx.Err()
		case ev := <-g.events:
			switch ev := ev.(type) {
			case clientLine:
				g.fromClient(bytesTrim(ev))
			case clientEOF:
				return g.stop()
			case childLine:
				if g.child != nil && ev.start == g.child.start {
					g.fromServer(ev.line)
				}
			case childExit:
				if g.child != nil && ev.start == g.child.start {
					if err := g.ended(ev.err); err != nil {
						g.child = nil
						return err
					}
				}
			}
		case now := <-ticker.C:
			if err := g.timers(now); err != nil {
				return err
			}
		}
	}
}

// start starts a process of the server and, when the client has
// initialized an earlier one, replays the handshake to it.
func (g *guard) start() error {
	g.starts++
	n := g.starts
	cmd := proc.Command(g.ctx, g.cfg.Env, g.cfg.Grace, g.cfg.Argv[0], g.cfg.Argv[1:]...)
	// The server dies with this process, even when it is SIGKILLed.
	proc.DieWithParent(cmd)
	cmd.Stderr = g.cfg.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := proc.Start(cmd); err != nil {
		return fmt.Errorf("start %s: %w", g.cfg.Argv[0], err)
	}
	c := &child{start: n, cmd: cmd, in: make(chan []byte, 1024), done: make(chan struct{})}
	g.child, g.dying, g.pingID = c, "", ""
	g.lastAlive = time.Now()
	g.notify(Event{Kind: Started, Start: n, PID: cmd.Process.Pid})
	go func() {
		defer stdin.Close()
		for {
			select {
			case line, ok := <-c.in:
				if !ok {
					return // the client left: stdin closes
				}
				if _, err := stdin.Write(append(line, '\n')); err != nil {
					// The process ended; its exit tells the loop.
					return
				}
			case <-c.done:
				return
			}
		}
	}()
	go func() {
		r := bufio.NewReaderSize(stdout, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytesTrim(line)) > 0 {
				g.send(childLine{start: n, line: bytesTrim(line)})
			}
			if err != nil {
				break
			}
		}
		c.err = proc.Wait(cmd)
		close(c.done)
		g.send(childExit{start: n, err: c.err})
	}()
	if g.initialize != nil {
		g.state = handshake
		g.handshakeID = g.ownID()
		line, err := withID(g.initialize, stringID(g.handshakeID))
		if err != nil {
			return err
		}
		g.deadline = time.Now().Add(g.cfg.StartTimeout)
		g.toServer(line)
		return nil
	}
	g.becomeUp()
	return nil
}

func (g *guard) ownID() string {
	g.nextID++
	return ownPrefix + strconv.Itoa(g.nextID)
}

// becomeUp lets requests pass again and sends what was held, in order.
func (g *guard) becomeUp() {
	g.state = up
	held := g.held
	g.held = nil
	for _, line := range held {
		g.fromClient(line)
	}
}

func (g *guard) fromClient(line []byte) {
	m := parse(line)
	if m.kind == response {
		g.replyToServer(m, line)
		return
	}
	if m.kind == request && m.method == "initialize" {
		g.initialize = append([]byte(nil), line...)
	}
	if m.kind == notification && m.method == "notifications/initialized" {
		g.initialized = append([]byte(nil), line...)
	}
	if m.kind == notification && m.method == "notifications/cancelled" {
		// A server need not answer a cancelled request: it is owed nothing
		// more, and is no sign of a hang.
		if id := cancelledID(line); id != "" {
			delete(g.pending, id)
		}
	}
	if g.state != up {
		if len(g.held) >= g.cfg.Held {
			if m.kind == request {
				g.toClient(errorReply(m.id, errorCode, fmt.Sprintf("nightwatch: MCP server %q is restarting and %d messages wait for it already: this call was not sent; make it again shortly.", g.cfg.Server, g.cfg.Held)))
			}
			return
		}
		g.held = append(g.held, line)
		return
	}
	if m.kind == request {
		c := &call{id: m.id, method: m.method, line: line, sent: time.Now()}
		if m.method == "tools/call" {
			c.tool, c.toolUseID = toolCall(line)
		}
		g.pending[idKey(m.id)] = c
	}
	g.toServer(line)
}

// replyToServer passes the client's answer to a server request on, under
// the server's own id; an answer to a process that is gone is dropped.
func (g *guard) replyToServer(m message, line []byte) {
	req, ok := g.serverReqs[idKey(m.id)]
	if !ok {
		g.toServer(line) // not one the guard renamed
		return
	}
	delete(g.serverReqs, idKey(m.id))
	if g.child == nil || req.start != g.child.start || g.state == down {
		return
	}
	if out, err := withID(line, req.id); err == nil {
		g.toServer(out)
	}
}

func (g *guard) fromServer(line []byte) {
	g.lastAlive = time.Now()
	m := parse(line)
	switch m.kind {
	case response:
		key := idKey(m.id)
		if g.handshakeID != "" && key == idKey(stringID(g.handshakeID)) {
			g.handshakeID = ""
			if m.failed {
				g.kill("refused the replayed initialize: " + oneLine(m.errMsg))
				return
			}
			if g.initialized != nil {
				g.toServer(g.initialized)
			}
			g.becomeUp()
			return
		}
		if g.pingID != "" && key == idKey(stringID(g.pingID)) {
			g.pingID = ""
			return
		}
		if strings.HasPrefix(key, `"`+ownPrefix) {
			return // an answer to an earlier ping
		}
		if c := g.pending[key]; c != nil && c.toolUseID != "" && (m.failed || m.isError) {
			// Told before the answer leaves, so that the hook reading
			// the call's failure finds it: the server itself answered.
			verdict := AnsweredIsError
			if m.failed {
				verdict = AnsweredError
			}
			g.notify(Event{Kind: Answered, Tool: c.tool, ToolUseID: c.toolUseID, Reason: verdict})
		}
		if c := g.pending[key]; c != nil && c.method == "tools/call" && c.tool != "" && m.taskID != "" {
			// Told before the answer leaves: the CLI may show it as an
			// empty success, and the job is not done while it runs.
			g.notify(Event{Kind: Tasked, Tool: c.tool, ToolUseID: c.toolUseID, TaskID: m.taskID})
		}
		delete(g.pending, key)
		g.served = true
		// It answers: whatever a ping still waits for, it is no hang.
		g.pingID = ""
		g.toClient(line)
	case request:
		id := g.ownID()
		g.serverReqs[idKey(stringID(id))] = serverReq{start: g.child.start, id: m.id}
		if out, err := withID(line, stringID(id)); err == nil {
			g.toClient(out)
		}
	default:
		g.toClient(line)
	}
}

func (g *guard) toServer(line []byte) {
	c := g.child
	if c == nil {
		return
	}
	select {
	case c.in <- line:
	default:
		g.kill("stopped reading its input")
	}
}

func (g *guard) toClient(line []byte) {
	// A client that stopped reading is gone; its stdin's end stops Run.
	_, _ = g.out.Write(append(line[:len(line):len(line)], '\n'))
}

// kill ends the current process for why; its exit restarts it.
func (g *guard) kill(why string) {
	if g.child == nil || g.dying != "" {
		return
	}
	g.dying = why
	proc.KillGroup(g.child.cmd)
}

// ended handles the exit of the current process: restart, or give up.
func (g *guard) ended(err error) error {
	how := g.dying
	if how == "" {
		how = exitWords(err)
	}
	g.child = nil
	g.handshakeID, g.pingID = "", ""
	if !g.served {
		// Never up: a server that fails at start is Claude Code's to see,
		// as without nightwatch (its init says failed).
		return fmt.Errorf("%w: %s: %w", ErrEndedAtStart, how, err)
	}
	now := time.Now()
	recent := g.restarts[:0]
	for _, t := range g.restarts {
		if now.Sub(t) < g.cfg.Window {
			recent = append(recent, t)
		}
	}
	g.restarts = recent
	if len(g.restarts) >= g.cfg.Restarts {
		return g.lose(fmt.Sprintf("%s, and it was restarted %d times within %s", how, len(g.restarts), g.cfg.Window))
	}
	// What the dead process owed the client will never come.
	for key, c := range g.pending {
		delete(g.pending, key)
		g.toClient(errorReply(c.id, errorCode, RestartError(g.cfg.Server, how, g.hints(c))))
	}
	pause := g.cfg.Backoff << len(g.restarts)
	if pause <= 0 || pause > g.cfg.MaxBackoff {
		pause = g.cfg.MaxBackoff
	}
	g.restarts = append(g.restarts, now)
	g.state, g.deadline = down, now.Add(pause)
	g.notify(Event{Kind: Restarted, Start: g.starts, Reason: how})
	return nil
}

// lose gives the server up: whatever the client waits for is answered,
// and Run ends.
func (g *guard) lose(why string) error {
	msg := fmt.Sprintf("nightwatch: MCP server %q could not be brought back (%s): this call was not sent.", g.cfg.Server, why)
	for key, c := range g.pending {
		delete(g.pending, key)
		g.toClient(errorReply(c.id, errorCode, LostError(g.cfg.Server, why, g.hints(c))))
	}
	for _, line := range g.held {
		if m := parse(line); m.kind == request {
			g.toClient(errorReply(m.id, errorCode, msg))
		}
	}
	g.held = nil
	g.notify(Event{Kind: Lost, Start: g.starts, Reason: why})
	return fmt.Errorf("%w: %s", ErrLost, why)
}

// timers starts a restart whose pause is over, ends a handshake or a ping
// that took too long, and pings a server that has a request outstanding
// too long.
func (g *guard) timers(now time.Time) error {
	switch g.state {
	case down:
		if now.Before(g.deadline) {
			return nil
		}
		if err := g.start(); err != nil {
			g.child = nil
			return g.lose(err.Error())
		}
	case handshake:
		if g.dying == "" && now.After(g.deadline) {
			g.kill(fmt.Sprintf("hung: no answer to the replayed initialize within %s", g.cfg.StartTimeout))
		}
	case up:
		if g.child == nil || g.dying != "" || g.cfg.HangAfter < 0 {
			return nil
		}
		if g.pingID != "" && g.oldest().IsZero() {
			g.pingID = "" // nothing is owed any more
		}
		if g.pingID != "" {
			if now.Sub(g.pingSent) >= g.cfg.PingTimeout {
				g.kill(fmt.Sprintf("hung: a request was outstanding for %s and a ping got no answer within %s",
					now.Sub(g.oldest()).Round(time.Second), g.cfg.PingTimeout))
			}
			return nil
		}
		oldest := g.oldest()
		if oldest.IsZero() {
			return nil
		}
		if now.Sub(oldest) >= g.cfg.HangAfter && now.Sub(g.pingSent) >= g.cfg.HangAfter {
			g.pingID, g.pingSent = g.ownID(), now
			g.toServer(ownRequest(stringID(g.pingID), "ping", nil))
		}
	}
	return nil
}

func (g *guard) oldest() time.Time {
	var t time.Time
	for _, c := range g.pending {
		if t.IsZero() || c.sent.Before(t) {
			t = c.sent
		}
	}
	return t
}

// stop ends the server when the client leaves: its stdin closes, what it
// still says is passed on, and the group is killed Grace later. The error
// is how the server ended when it exited by itself with a failure (an
// *exec.ExitError, for exec-server's exit code).
func (g *guard) stop() error {
	c := g.child
	if c == nil {
		return nil
	}
	close(c.in)
	kill := time.NewTimer(g.cfg.Grace)
	defer kill.Stop()
	killed := false
	for {
		select {
		case ev := <-g.events:
			if l, ok := ev.(childLine); ok && l.start == c.start {
				g.toClient(l.line)
			}
			continue
		case <-kill.C:
			killed = true
			proc.KillGroup(c.cmd)
			continue
		case <-c.done:
		}
		break
	}
	// Lines read before the exit may still wait in the loop's queue.
	for {
		select {
		case ev := <-g.events:
			if l, ok := ev.(childLine); ok && l.start == c.start {
				g.toClient(l.line)
			}
			continue
		default:
		}
		break
	}
	var ee *exec.ExitError
	if !killed && errors.As(c.err, &ee) && ee.ExitCode() > 0 {
		return c.err
	}
	return nil
}

// hints are the hints of the tool c called (none for other methods: a
// call that is not a tool's may have had effects all the same).
func (g *guard) hints(c *call) effects.Hints {
	if c.tool == "" || g.cfg.Hints == nil {
		return effects.Hints{}
	}
	return g.cfg.Hints(c.tool)
}

func (g *guard) notify(ev Event) {
	if g.cfg.Notify != nil {
		g.cfg.Notify(ev)
	}
}

// exitWords says how a process ended: "exited with code 3", "was killed
// by signal: killed".
func exitWords(err error) string {
	d := proc.ExitDescription(err)
	if code, ok := strings.CutPrefix(d, "exit status "); ok {
		return "exited with code " + code
	}
	if strings.HasPrefix(d, "killed by signal") {
		return "was " + d
	}
	return "ended: " + d
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
