package session

import (
	"bytes"
	"strings"
	"testing"
)

// A session's log keeps at most its bound, says where it was cut, and
// never refuses a write (the child must not block on a full log).
func TestCappedLog(t *testing.T) {
	for _, chunk := range []int{1, 3, 10, 1000} {
		var buf bytes.Buffer
		c := &cappedLog{w: &buf, max: 10}
		data := []byte(strings.Repeat("x", 25))
		for p := data; len(p) > 0; {
			k := min(chunk, len(p))
			if n, err := c.Write(p[:k]); n != k || err != nil {
				t.Fatalf("chunk %d: write returned %d, %v", chunk, n, err)
			}
			p = p[k:]
		}
		got := buf.String()
		if !strings.HasPrefix(got, strings.Repeat("x", 10)+"\n[nightwatch: this log was cut at 10 bytes") || strings.Count(got, "x") != 10 || strings.Count(got, "cut at") != 1 {
			t.Errorf("chunk %d: log is %q", chunk, got)
		}
	}
	var buf bytes.Buffer
	c := &cappedLog{w: &buf, max: 10}
	_, _ = c.Write([]byte("short"))
	if buf.String() != "short" {
		t.Errorf("a short log is changed: %q", buf.String())
	}
}
