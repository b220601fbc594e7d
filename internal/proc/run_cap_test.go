package proc

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// capped keeps the head and the tail of what it is given, whatever the
// sizes of the writes, and says how much it cut.
func TestCappedKeepsHeadAndTail(t *testing.T) {
	var all bytes.Buffer
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&all, "line %d\n", i)
	}
	data := all.Bytes()
	for _, chunk := range []int{1, 7, 100, 4096, len(data)} {
		c := newCapped(1000)
		for p := data; len(p) > 0; {
			k := min(chunk, len(p))
			if n, err := c.Write(p[:k]); n != k || err != nil {
				t.Fatalf("write: %d, %v", n, err)
			}
			p = p[k:]
		}
		got := string(c.Bytes())
		head, tail := string(data[:500]), string(data[len(data)-500:])
		cut := fmt.Sprintf("[… %d bytes cut by nightwatch …]", len(data)-1000)
		if !strings.HasPrefix(got, head) || !strings.HasSuffix(got, tail) || !strings.Contains(got, cut) {
			t.Fatalf("chunk %d: got %d bytes, head ok %v, tail ok %v, cut said %v", chunk, len(got),
				strings.HasPrefix(got, head), strings.HasSuffix(got, tail), strings.Contains(got, cut))
		}
	}
	small := newCapped(1000)
	_, _ = small.Write([]byte("short"))
	if string(small.Bytes()) != "short" {
		t.Errorf("a short output is changed: %q", small.Bytes())
	}
}

// A child that prints far more than the bound is read to its end (never
// blocked on a full pipe) and only the bound is kept.
func TestRunBoundsOutput(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this system")
	}
	res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "head -c 20000000 /dev/zero; echo; echo last"}, MaxOutput: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout) > 4096+100 || !strings.HasSuffix(string(res.Stdout), "last\n") || !strings.Contains(string(res.Stdout), "bytes cut by nightwatch") {
		t.Errorf("kept %d bytes, ends %q", len(res.Stdout), res.Stdout[max(0, len(res.Stdout)-20):])
	}
}
