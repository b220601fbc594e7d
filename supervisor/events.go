package supervisor

import (
	"bufio"
	"encoding/json"
	"io"
	"os"

	"github.com/nightwatch-dev/nightwatch/healthcheck"
	"github.com/nightwatch-dev/nightwatch/internal/atomicfile"
	"github.com/nightwatch-dev/nightwatch/journal"
)

// eventTail reads the lines the hooks appended to the batch's events file
// since the last look, so that every change of a server's state seen by a
// session lands in the night's journal.
type eventTail struct {
	path   string
	offset int64
}

// skipToEnd starts the tail at the file's current end.
func (t *eventTail) skipToEnd() {
	if fi, err := os.Stat(t.path); err == nil {
		t.offset = fi.Size()
	}
}

func (t *eventTail) next() []healthcheck.Event {
	f, err := atomicfile.OpenRegular(t.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil
	}
	r := bufio.NewReader(f)
	var out []healthcheck.Event
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			// A line without its newline is still being written: read it
			// next time.
			return out
		}
		t.offset += int64(len(line))
		var ev healthcheck.Event
		if json.Unmarshal(line, &ev) == nil {
			out = append(out, ev)
		}
	}
}

// absorbServerEvents copies new state changes and blocked calls from the
// events file into the journal.
func (n *night) absorbServerEvents() {
	for _, ev := range n.events.next() {
		switch ev.Kind {
		case healthcheck.EventState:
			n.append(journal.Event{Type: journal.ServerState, Time: ev.Time, Server: ev.Server, Status: journal.Status(ev.To),
				By: ev.By, Code: ev.Code, Reason: ev.Reason})
		case healthcheck.EventBlocked:
			n.append(journal.Event{Type: journal.CallBlocked, Time: ev.Time, Server: ev.Server, Tool: ev.Tool})
		}
	}
}
