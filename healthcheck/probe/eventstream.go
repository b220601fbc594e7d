package probe

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
)

// maxMessageSize bounds one stdout line, one event-stream event or one
// HTTP answer body. A tools/list answer of a large server is a few hundred
// KiB (its definitions go into the model's context); 8 MiB is no answer a
// session could use, and a probe must not hold more in memory.
const maxMessageSize = 8 << 20

// maxMessageMiB is maxMessageSize for messages.
const maxMessageMiB = maxMessageSize >> 20

// event is one server-sent event (text/event-stream).
type event struct {
	Type string // "message" when the stream did not name one
	Data string
	ID   string
}

// eventReader reads server-sent events as the HTML spec defines them:
// lines ended by CRLF, LF or CR; "field: value" lines; data lines joined
// with "\n"; a blank line ends an event. It is lenient where servers are
// sloppy: an event still pending at the end of the stream is delivered.
type eventReader struct {
	lines *bufio.Scanner
	first bool
}

var errEventTooLarge = fmt.Errorf("event stream: event larger than %d MiB", maxMessageMiB)

func newEventReader(r io.Reader) *eventReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxMessageSize)
	sc.Split(scanEventLines)
	return &eventReader{lines: sc, first: true}
}

// next returns the next event with data, or the reader's error (io.EOF at
// the end of the stream).
func (r *eventReader) next() (event, error) {
	var ev event
	var data strings.Builder
	hasData := false
	for r.lines.Scan() {
		line := r.lines.Text()
		if r.first {
			line = strings.TrimPrefix(line, "\uFEFF")
			r.first = false
		}
		if line == "" {
			if hasData {
				return finishEvent(ev, data.String()), nil
			}
			ev = event{} // an event without data is not dispatched
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // comment, often a keep-alive
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Type = value
		case "data":
			if data.Len()+len(value) > maxMessageSize {
				return event{}, errEventTooLarge
			}
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		case "id":
			if !strings.ContainsRune(value, 0) {
				ev.ID = value
			}
		}
	}
	if err := r.lines.Err(); err != nil {
		return event{}, err
	}
	if hasData {
		return finishEvent(ev, data.String()), nil
	}
	return event{}, io.EOF
}

func finishEvent(ev event, data string) event {
	ev.Data = strings.TrimSuffix(data, "\n")
	if ev.Type == "" {
		ev.Type = "message"
	}
	return ev
}

// scanEventLines splits at CRLF, LF or a lone CR.
func scanEventLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if atEOF {
			return i + 1, data[:i], nil
		}
		return 0, nil, nil // a CR at the end: wait to see whether LF follows
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}
