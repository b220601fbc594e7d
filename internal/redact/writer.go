package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// maxPending bounds the bytes a Writer holds back waiting for the end of a
// line; a longer line is redacted and written in pieces.
const maxPending = 1 << 20

// Writer redacts what it writes to W line by line: every complete line
// goes through String (with the remembered secrets, and their JSON-escaped
// forms, so a JSON log line loses a key holding a quote or a backslash
// too) before it reaches W. A last line without its newline waits for the
// next Write or for Flush.
type Writer struct {
	W       io.Writer
	mu      sync.Mutex
	pending []byte
}

// NewWriter returns a Writer over w: the night's log file and console,
// an operator command's output.
func NewWriter(w io.Writer) *Writer { return &Writer{W: w} }

// Write redacts every complete line of p (with what earlier writes left
// pending) and writes it to W. It reports len(p) when W took everything.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = append(w.pending, p...)
	end := bytes.LastIndexByte(w.pending, '\n') + 1
	if end == 0 && len(w.pending) < maxPending {
		return len(p), nil
	}
	if end == 0 {
		end = len(w.pending)
	}
	if err := w.emit(w.pending[:end]); err != nil {
		w.pending = w.pending[:0]
		return 0, err
	}
	w.pending = append(w.pending[:0], w.pending[end:]...)
	return len(p), nil
}

// Flush writes a pending partial line, redacted.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 {
		return nil
	}
	err := w.emit(w.pending)
	w.pending = w.pending[:0]
	return err
}

func (w *Writer) emit(b []byte) error {
	_, err := io.WriteString(w.W, String(string(b), jsonForms()...))
	return err
}

// jsonForms are the remembered secrets as they appear inside a JSON
// string when escaping changes them.
func jsonForms() []string {
	var out []string
	for _, s := range remembered() {
		q, err := json.Marshal(s)
		if err != nil {
			continue
		}
		if inner := string(q[1 : len(q)-1]); inner != s {
			out = append(out, inner)
		}
	}
	return out
}
