package healthcheck

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"time"

	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
)

// Event kinds written to the events file.
const (
	EventBlocked = "blocked"
	// EventRepeatRefused: the hook refused a call that an earlier attempt
	// of the job already made successfully (package effects); the work is
	// done, the call is neither a permission denial nor lost.
	EventRepeatRefused = "repeat-refused"
	EventState         = "state"
	EventTrial         = "trial"
	// The guard of a session's stdio server (exec-server, package
	// serverguard) writes these, with the attempt's Run, Job and Attempt:
	// each start of the server's process (Start counts them within one
	// exec-server; a second exec-server in one attempt is Claude Code's
	// own respawn), each restart nightwatch made (Reason how the process
	// ended) and a server that could not be brought back. A hook writes
	// server-restarted too, with By ByProbe and Since, for an HTTP server
	// that came back as a new process (HTTPRestart).
	EventServerStarted   = "server-started"
	EventServerRestarted = "server-restarted"
	EventServerLost      = "server-lost"
	// EventCallAnswered: exec-server saw the stdio server itself answer
	// the call ToolUseID (Tool) with a failure, Verdict AnsweredError or
	// AnsweredIsError, written before the answer reached Claude Code. That
	// call's failure is the server's own answer, whatever its text says
	// (ServerAnswered).
	EventCallAnswered = "call-answered"
	// EventHolding: a hook started to hold a call for a server that is
	// down but being repaired; EventHeld: the hold ended (Outcome,
	// HeldSeconds). Both count as the session's output for the night's
	// stall timer: 2.1.197 prints nothing while a hook runs.
	EventHolding = "holding"
	EventHeld    = "held"
)

// The outcomes of a hold (Event.Outcome).
const (
	// HoldAnswered: the server came back and the call went ahead.
	HoldAnswered = "answered"
	// HoldGaveUp: the hold ran out and the call was denied.
	HoldGaveUp = "gave-up"
	// HoldDenied: the server's failure changed to one no hold waits for
	// (rate-limited, auth) and the call was denied.
	HoldDenied = "denied"
	// HoldCancelled: the hook was stopped while holding.
	HoldCancelled = "cancelled"
)

// How a server answered a call with a failure (EventCallAnswered's
// Verdict).
const (
	// AnsweredError: a JSON-RPC error.
	AnsweredError = "jsonrpc-error"
	// AnsweredIsError: a result with isError set.
	AnsweredIsError = "is-error"
)

// GuardRestarted opens the JSON-RPC error exec-server (package
// serverguard) gives a call that was in flight when its stdio server died:
// nightwatch's own word that the server's process ended under the call.
const GuardRestarted = "nightwatch restarted MCP server"

// Event is one line of the events file: a call the hook blocked or a
// server's change of state. The supervisor and the morning report count
// blocked calls and outages from these lines.
type Event struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Session string    `json:"session,omitempty"`
	Server  string    `json:"server"`
	Tool    string    `json:"tool,omitempty"`
	// ToolUseID is the call a blocked event is of (the PreToolUse
	// payload's tool_use_id): the session subtracts the calls its hook
	// blocked from the result's permission_denials.
	ToolUseID string `json:"tool_use_id,omitempty"`
	From      Status `json:"from,omitempty"`
	To        Status `json:"to,omitempty"`
	Verdict   string `json:"verdict,omitempty"`
	Code      string `json:"code,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// By says who made the observation behind a state change (see By).
	By    By        `json:"by,omitempty"`
	Until time.Time `json:"until,omitzero"`
	// The attempt whose session runs the server, and the server's start
	// and pid (server-started, -restarted, -lost).
	Run     string `json:"run,omitempty"`
	Job     string `json:"job,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	Start   int    `json:"start,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// Since is, for a server-restarted of an HTTP server (By ByProbe: a
	// hook saw it back as a new process, HTTPRestart), the first refused
	// connection of the outage it ended (Entry.RefusedAt): every call of
	// that outage says so, the night journals it once.
	Since time.Time `json:"since,omitzero"`
	// Outcome and HeldSeconds are a held call's (EventHeld).
	Outcome     string  `json:"outcome,omitempty"`
	HeldSeconds float64 `json:"heldSeconds,omitempty"`
	// Dir is the attempt folder of the night's session whose hook wrote
	// a hold (NIGHTWATCH_SESSION_DIR), so that its stall timer counts it.
	Dir string `json:"dir,omitempty"`
}

// EventLog appends events as JSON lines. A zero Path writes nothing.
type EventLog struct {
	Path string
	// Warn receives write failures, which are reported, never fatal.
	Warn func(string)
}

// Append writes ev as one line.
func (l *EventLog) Append(ev Event) {
	if l == nil || l.Path == "" {
		return
	}
	b, err := json.Marshal(ev)
	if err == nil {
		err = atomicfile.AppendLine(l.Path, b)
	}
	if err != nil && l.Warn != nil {
		l.Warn("nightwatch: cannot write events file: " + err.Error())
	}
}

// EventTail reads the lines the hooks appended to an events file since the
// last look: the night journals them, a cluster's worker forwards them to
// the coordinator.
type EventTail struct {
	Path   string
	offset int64
}

// SkipToEnd starts the tail at the file's current end.
func (t *EventTail) SkipToEnd() {
	if fi, err := os.Stat(t.Path); err == nil {
		t.offset = fi.Size()
	}
}

// Next is every whole line appended since the last look.
func (t *EventTail) Next() []Event {
	f, err := atomicfile.OpenRegular(t.Path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil
	}
	r := bufio.NewReader(f)
	var out []Event
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			// A line without its newline is still being written: read it
			// next time.
			return out
		}
		t.offset += int64(len(line))
		var ev Event
		if json.Unmarshal(line, &ev) == nil {
			out = append(out, ev)
		}
	}
}
