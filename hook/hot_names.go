package hook

import (
	"io"
	"time"

	"github.com/nightwatch-dev/nightwatch/effects"
	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/hook/hot"
)

// The payload, the event names, the exit codes and the messages live in
// hook/hot, the hot path both executables share; these are the same
// under the names the whole hook has always had.

// Event names of the Claude Code hook protocol that nightwatch handles.
const (
	PreToolUse         = hot.PreToolUse
	PostToolUse        = hot.PostToolUse
	PostToolUseFailure = hot.PostToolUseFailure
)

// Exit codes. 2 is the one Claude Code reads as "block" in PreToolUse.
const (
	ExitAllow = hot.ExitAllow
	ExitBlock = hot.ExitBlock
)

// Bounds of the payload's kept fields (hot.Payload).
const (
	MaxFieldBytes = hot.MaxFieldBytes
	MaxErrorBytes = hot.MaxErrorBytes
	MaxInputBytes = hot.MaxInputBytes
)

// Payload is the part of a hook's input nightwatch needs (hot.Payload).
type Payload = hot.Payload

// ErrNotObject is hot.ErrNotObject.
var ErrNotObject = hot.ErrNotObject

// Decode reads a payload without tool_input (hot.Decode).
func Decode(r io.Reader) (*Payload, error) { return hot.Decode(r) }

// DecodeInput reads a payload with tool_input (hot.DecodeInput).
func DecodeInput(r io.Reader) (*Payload, error) { return hot.DecodeInput(r) }

// BlockMessage is hot.BlockMessage.
func BlockMessage(server string, e *healthcheck.Entry, now time.Time) string {
	return hot.BlockMessage(server, e, now)
}

// HeldMessage is hot.HeldMessage.
func HeldMessage(server string, e *healthcheck.Entry, now time.Time, waited time.Duration) string {
	return hot.HeldMessage(server, e, now, waited)
}

// BackContext is hot.BackContext.
func BackContext(server string, waited time.Duration, newProcess string) string {
	return hot.BackContext(server, waited, newProcess)
}

// RepairContext is hot.RepairContext.
func RepairContext(server string, maxHold time.Duration, h effects.Hints) string {
	return hot.RepairContext(server, maxHold, h)
}
